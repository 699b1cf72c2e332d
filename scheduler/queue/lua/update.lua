local key, prio = ARGV[8], ARGV[9]
if redis.call('EXISTS', pk(key)) == 0 then
  new_pod(key, prio)
  return {'active', 'added'}
end
set_priority(key, prio)
if redis.call('HGET', pk(key), 'queue') == 'unschedulable' then
  unlink(key)
  if backing_off(key) then to_backoff(key, 'UnschedulablePodUpdate', '') else to_active(key, 'UnschedulablePodUpdate', '') end
  return {redis.call('HGET', pk(key), 'queue'), 'moved'}
end
return {redis.call('HGET', pk(key), 'queue'), ''}
