local z = ({active = KA, backoff = KB, unschedulable = KU, in_flight = KI})[ARGV[5]]
local out = {}
for _, m in ipairs(redis.call('ZRANGE', z, 0, tonumber(ARGV[6]) - 1)) do
  local key = m
  if z == KA then key = key_of(m) end
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGETALL', pk(key))
end
return out
