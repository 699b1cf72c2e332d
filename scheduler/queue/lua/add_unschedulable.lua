local key, cycle_s, unsched, msg = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local h = pk(key)
if redis.call('HGET', h, 'queue') ~= 'in_flight' then return false end
if redis.call('HGET', h, 'cycle') ~= cycle_s then return false end
unlink(key)
redis.call('HSET', h, 'popped_at', '', 'message', msg, 'timestamp', NOW_S, 'backoff_expiry', '')
local mrc = tonumber(redis.call('GET', KM) or '-1')
if unsched == '0' or mrc >= tonumber(cycle_s) then
  to_backoff(key)
  return 'backoff'
end
expiry_of(key)
redis.call('HSET', h, 'queue', 'unschedulable', 'unschedulable_since', NOW_S)
redis.call('ZADD', KU, NOW_S, key)
return 'unschedulable'
