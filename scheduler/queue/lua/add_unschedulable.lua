local key, cycle_s, unsched, msg, err = ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local h = pk(key)
if redis.call('HGET', h, 'queue') ~= 'in_flight' then return false end
if redis.call('HGET', h, 'cycle') ~= cycle_s then return false end
unlink(key)
-- As AddUnschedulableIfNotPresent: count the error or the rejection (a rejection ends a run of errors),
-- refresh the timestamp, drop the cached expiry.
if err == '1' then
  redis.call('HINCRBY', h, 'consecutive_errors', 1)
else
  redis.call('HINCRBY', h, 'unschedulable_count', 1)
  redis.call('HSET', h, 'consecutive_errors', '0')
end
redis.call('HSET', h, 'popped_at', '', 'message', msg, 'timestamp', NOW_S, 'backoff_expiry', '')
local mrc = tonumber(redis.call('GET', KM) or '-1')
if unsched == '0' or err == '1' or mrc >= tonumber(cycle_s) then
  to_backoff(key, 'ScheduleAttemptFailure', '')
  return 'backoff'
end
expiry_of(key)
redis.call('HSET', h, 'queue', 'unschedulable', 'unschedulable_since', NOW_S)
redis.call('ZADD', KU, NOW_S, key)
note(key, 'unschedulable', 'ScheduleAttemptFailure', '')
return 'unschedulable'
