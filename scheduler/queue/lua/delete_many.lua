-- delete.lua for every key given, in order, in one script (the binder's done for a whole batch): one
-- EVALSHA instead of one per pod, each carrying the prelude's arguments again.
local why = ARGV[8]
local removed = 0
for i = 9, #ARGV do
  local key = ARGV[i]
  if redis.call('EXISTS', pk(key)) == 0 then
    if why == 'Deleted' and redis.call('EXISTS', P .. ':tl:' .. key) == 1 then note(key, '', why, '') end
  else
    unlink(key)
    redis.call('DEL', pk(key))
    note(key, '', why, '')
    removed = removed + 1
  end
end
return removed
