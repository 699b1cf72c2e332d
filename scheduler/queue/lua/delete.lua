local key = ARGV[5]
if redis.call('EXISTS', pk(key)) == 0 then return 0 end
unlink(key)
redis.call('DEL', pk(key))
return 1
