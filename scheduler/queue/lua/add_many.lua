-- add() for one pod or many, in order, in one script: (key, priority) pairs from ARGV[8] (the mirror's watch batch
-- of new pods, or a relist's thousand: one EVALSHA instead of one per pod, each carrying the prelude's arguments
-- again). A pod already queued keeps its place and takes the new priority. Returns how many were added.
local added = 0
for i = 8, #ARGV, 2 do
  local key, prio = ARGV[i], ARGV[i + 1]
  if redis.call('EXISTS', pk(key)) == 1 then
    set_priority(key, prio)
  else
    new_pod(key, prio)
    added = added + 1
  end
end
return added
