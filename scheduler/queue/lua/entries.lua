local limit = tonumber(ARGV[9])
local out = {}
local function list(z, members)
  for _, m in ipairs(members) do
    local key = m
    if z == KA or z == KB then key = key_of(m) end
    out[#out + 1] = key
    out[#out + 1] = redis.call('HGETALL', pk(key))
  end
end
if ARGV[8] == 'backoff' then
  -- podBackoffQ in its order (the one pop() takes from), then podErrorBackoffQ.
  list(KB, redis.call('ZRANGE', KB, 0, limit - 1))
  local left = limit - #out / 2
  if left > 0 then list(KE, redis.call('ZRANGE', KE, 0, left - 1)) end
else
  local z = ({active = KA, unschedulable = KU, in_flight = KI})[ARGV[8]]
  list(z, redis.call('ZRANGE', z, 0, limit - 1))
end
return out
