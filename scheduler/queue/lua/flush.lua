local done = redis.call('ZRANGEBYSCORE', KB, '-inf', NOW_S)
for _, key in ipairs(done) do
  unlink(key)
  to_active(key)
end
local cutoff = NOW - tonumber(ARGV[5])
local left = redis.call('ZRANGEBYSCORE', KU, '-inf', '(' .. fmt(cutoff))
local backoff = 0
if #left > 0 then backoff = move_to_active_or_backoff(left) end
return {#done, #left, backoff}
