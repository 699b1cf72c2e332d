-- The pods in the unschedulable pool whose last failure message names one of the given texts (the
-- reasons of the plugins whose queueing hints are asked), with that message: key, message, ...
local out = {}
for _, key in ipairs(redis.call('ZRANGE', KU, 0, -1)) do
  local msg = redis.call('HGET', pk(key), 'message') or ''
  for i = 8, #ARGV do
    if string.find(msg, ARGV[i], 1, true) then
      out[#out + 1] = key
      out[#out + 1] = msg
      break
    end
  end
end
return out
