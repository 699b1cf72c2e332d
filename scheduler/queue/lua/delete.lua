local key, why = ARGV[8], ARGV[9]
if redis.call('EXISTS', pk(key)) == 0 then
  -- A deletion of a pod out of the queue (bound, gated) still closes its timeline: a new pod of that name
  -- starts after this mark.
  if why == 'Deleted' and redis.call('EXISTS', P .. ':tl:' .. key) == 1 then note(key, '', why, '') end
  return 0
end
unlink(key)
redis.call('DEL', pk(key))
note(key, '', why, '')
return 1
