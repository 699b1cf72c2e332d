-- Take every key given out of the queue, in order, in one script (one pod's delete/done, or the binder's done
-- for a whole batch: one EVALSHA instead of one per pod, each carrying the prelude's arguments again).
local why = ARGV[8]
local removed = 0
for i = 9, #ARGV do
  local key = ARGV[i]
  if redis.call('EXISTS', pk(key)) == 0 then
    -- A deletion of a pod out of the queue (bound, gated) still closes its timeline: a new pod of that name
    -- starts after this mark.
    if why == 'Deleted' and redis.call('EXISTS', P .. ':tl:' .. key) == 1 then note(key, '', why, '') end
  else
    unlink(key)
    redis.call('DEL', pk(key))
    note(key, '', why, '')
    removed = removed + 1
  end
end
return removed
