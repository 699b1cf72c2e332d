local key, prio = ARGV[5], ARGV[6]
if redis.call('EXISTS', pk(key)) == 1 then
  set_priority(key, prio)
  return 0
end
new_pod(key, prio)
return 1
