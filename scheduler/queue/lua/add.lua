local key, prio = ARGV[8], ARGV[9]
if redis.call('EXISTS', pk(key)) == 1 then
  set_priority(key, prio)
  return 0
end
new_pod(key, prio)
return 1
