-- As activeQueue.unlockedPop, once per pod: activeQ's head; once activeQ is empty (SchedulerPopFromBackoffQ)
-- podBackoffQ's head, backing off or not (never podErrorBackoffQ's). Returns {popped from backoffQ, pairs}.
local n = tonumber(ARGV[8])
local out = {}
local function take(key, event)
  local h = pk(key)
  local c = redis.call('INCR', KC)
  redis.call('HINCRBY', h, 'attempts', 1)
  redis.call('HSET', h, 'cycle', c, 'backoff_expiry', '', 'queue', 'in_flight', 'popped_at', NOW_S)
  redis.call('ZADD', KI, NOW_S, key)
  note(key, 'in_flight', event, '')
  out[#out + 1] = key
  out[#out + 1] = redis.call('HGETALL', h)
end
local popped = redis.call('ZPOPMIN', KA, n)
for i = 1, #popped, 2 do take(key_of(popped[i]), 'Popped') end
local from_backoff = 0
if POP_FROM_BACKOFF and #out / 2 < n then
  popped = redis.call('ZPOPMIN', KB, n - #out / 2)
  for i = 1, #popped, 2 do
    take(key_of(popped[i]), 'PopFromBackoffQ')
    from_backoff = from_backoff + 1
  end
end
return {from_backoff, out}
