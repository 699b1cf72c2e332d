local out = {}
local popped = redis.call('ZPOPMIN', KA, tonumber(ARGV[5]))
for i = 1, #popped, 2 do
  local key = key_of(popped[i])
  local h = pk(key)
  local c = redis.call('INCR', KC)
  redis.call('HINCRBY', h, 'attempts', 1)
  redis.call('HSET', h, 'cycle', c, 'backoff_expiry', '', 'queue', 'in_flight', 'popped_at', NOW_S)
  redis.call('ZADD', KI, NOW_S, key)
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGETALL', h)
end
return out
