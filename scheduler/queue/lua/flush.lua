-- As flushBackoffQCompleted: podBackoffQ's then podErrorBackoffQ's pods whose expiry is before now's window.
local before = '(' .. fmt(align(NOW))
local done = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KB, '-inf', before)) do done[#done + 1] = key_of(m) end
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KE, '-inf', before)) do done[#done + 1] = key end
for _, key in ipairs(done) do
  unlink(key)
  to_active(key, 'BackoffComplete', '')
end
-- As flushUnschedulablePodsLeftover: longer than podMaxInUnschedulablePodsDuration in the pool.
local cutoff = NOW - tonumber(ARGV[8])
local left = redis.call('ZRANGEBYSCORE', KU, '-inf', '(' .. fmt(cutoff))
local backoff = 0
if #left > 0 then backoff = move_to_active_or_backoff(left, 'UnschedulableTimeout', '') end
return {#done, #left, backoff}
