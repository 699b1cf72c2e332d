local cutoff = NOW - tonumber(ARGV[8])
local dead = redis.call('ZRANGEBYSCORE', KI, '-inf', '(' .. fmt(cutoff))
for _, key in ipairs(dead) do
  unlink(key)
  redis.call('HSET', pk(key), 'popped_at', '')
  to_active(key, 'LeaseExpired', '')
end
return dead
