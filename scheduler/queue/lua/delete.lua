local key, why = ARGV[8], ARGV[9]
if redis.call('EXISTS', pk(key)) == 0 then return 0 end
unlink(key)
redis.call('DEL', pk(key))
note(key, '', why, '')
return 1
