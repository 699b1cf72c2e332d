local keys = redis.call('ZRANGE', KU, 0, -1)
return {#keys, move_to_active_or_backoff(keys, ARGV[8], '')}
