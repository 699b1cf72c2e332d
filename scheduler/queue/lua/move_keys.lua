-- The named pods that wait in the unschedulable pool go to activeQ or backoffQ (a queueing hint said an
-- event may make them schedulable); the others are left where they are.
local keys = {}
for i = 9, #ARGV do
  if redis.call('HGET', pk(ARGV[i]), 'queue') == 'unschedulable' then table.insert(keys, ARGV[i]) end
end
if #keys == 0 then return {0, 0} end
return {#keys, move_to_active_or_backoff(keys, ARGV[8], 'QueueingHint')}
