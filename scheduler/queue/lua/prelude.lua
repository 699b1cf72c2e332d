local P = ARGV[1]
local KA, KB, KU, KI, KC, KM, KE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local INITIAL, MAXB = tonumber(ARGV[2]), tonumber(ARGV[3])
local NOW_S = ARGV[4]
local NOW = tonumber(NOW_S)
-- SchedulerPopFromBackoffQ: 1 s ordering windows in backoffQ, and pop() takes its head when activeQ is empty.
local POP_FROM_BACKOFF = ARGV[5] == '1'
-- Each pod's timeline: kept this many seconds after its last move (0: none), this many moves at most.
local TL_TTL, TL_MAX = tonumber(ARGV[6]), tonumber(ARGV[7])
-- Every script's own arguments start at ARGV[8].

local function pk(key) return P .. ':pod:' .. key end
local function fmt(x) return string.format('%.17g', x) end
local function num(s)
  if s == false or s == nil or s == '' then return nil end
  return tonumber(s)
end

-- One move on the pod's timeline: "<time>|<queue entered>|<event>|<via>", capped and expiring.
local function note(key, queue, event, via)
  if TL_TTL <= 0 then return end
  local k = P .. ':tl:' .. key
  if redis.call('RPUSH', k, NOW_S .. '|' .. queue .. '|' .. event .. '|' .. (via or '')) > TL_MAX then
    redis.call('LTRIM', k, -TL_MAX, -1)
  end
  redis.call('EXPIRE', k, TL_TTL)
end

-- PrioritySort.Less as a byte-ordered string; the key breaks ties.
local function member(key)
  local h = pk(key)
  local prio = tonumber(redis.call('HGET', h, 'priority'))
  local ts = tonumber(redis.call('HGET', h, 'timestamp'))
  return string.format('%010.0f|%019.0f|', 2147483647 - prio, math.floor(ts * 1e6 + 0.5)) .. key
end
local function key_of(m) return string.match(m, '^%d+|%d+|(.*)$') end

-- The last attempt ended in an error: the pod waits in podErrorBackoffQ (never popped before its expiry).
local function errored(key) return (num(redis.call('HGET', pk(key), 'consecutive_errors')) or 0) > 0 end

local function unlink(key)
  local h = pk(key)
  local q = redis.call('HGET', h, 'queue')
  if q == 'active' then redis.call('ZREM', KA, member(key))
  elseif q == 'backoff' then redis.call('ZREM', KB, member(key)); redis.call('ZREM', KE, key)
  elseif q == 'unschedulable' then redis.call('ZREM', KU, key)
  elseif q == 'in_flight' then redis.call('ZREM', KI, key) end
  redis.call('HSET', h, 'queue', '')
end

-- As backoffQueue.calculateBackoffDuration.
local function backoff_duration(count)
  if count == 0 then return 0 end
  local d = INITIAL
  for _ = 1, count - 1 do
    if d > MAXB - d then return MAXB end
    d = d + d
  end
  return d
end

-- As alignToWindow.
local function align(t)
  if POP_FROM_BACKOFF then return math.floor(t) end
  return t
end

-- As getBackoffTime: none without a failure (or with podMaxBackoff 0), else the put-back time plus the
-- backoff (doubling with the consecutive errors while there are some, else with the rejections), aligned.
local function expiry_of(key)
  local h = pk(key)
  local count = num(redis.call('HGET', h, 'consecutive_errors')) or 0
  if count == 0 then count = num(redis.call('HGET', h, 'unschedulable_count')) or 0 end
  if MAXB == 0 or count == 0 then return nil end
  local e = num(redis.call('HGET', h, 'backoff_expiry'))
  if e == nil then
    e = align(tonumber(redis.call('HGET', h, 'timestamp')) + backoff_duration(count))
    redis.call('HSET', h, 'backoff_expiry', fmt(e))
  end
  return e
end

-- As isPodBackingoff: the expiry is not before now's window.
local function backing_off(key)
  local e = expiry_of(key)
  return e ~= nil and e >= align(NOW)
end

local function to_active(key, event, via)
  local h = pk(key)
  if redis.call('HGET', h, 'initial_attempt_timestamp') == '' then
    redis.call('HSET', h, 'initial_attempt_timestamp', NOW_S)
  end
  redis.call('HSET', h, 'queue', 'active', 'unschedulable_since', '')
  redis.call('ZADD', KA, 0, member(key))
  note(key, 'active', event, via)
end

-- podBackoffQ: score the expiry, member as activeQ's (a window's pods in activeQ's order);
-- podErrorBackoffQ: score the expiry, member the key.
local function backoff_add(key)
  local e = expiry_of(key)
  local score = '-inf'
  if e ~= nil then score = fmt(e) end
  if errored(key) then redis.call('ZADD', KE, score, key) else redis.call('ZADD', KB, score, member(key)) end
end

local function to_backoff(key, event, via)
  backoff_add(key)
  redis.call('HSET', pk(key), 'queue', 'backoff', 'unschedulable_since', '')
  note(key, 'backoff', event, via)
end

-- Returns how many went to backoffQ (the rest went to activeQ), for queue_incoming_pods_total.
local function move_to_active_or_backoff(keys, event, via)
  local backoff = 0
  for _, key in ipairs(keys) do
    unlink(key)
    if backing_off(key) then to_backoff(key, event, via); backoff = backoff + 1 else to_active(key, event, via) end
  end
  redis.call('SET', KM, redis.call('GET', KC) or '0')
  return backoff
end

local function new_pod(key, prio)
  redis.call('HSET', pk(key), 'priority', prio, 'timestamp', NOW_S, 'attempts', '0',
    'initial_attempt_timestamp', '', 'cycle', '0', 'backoff_expiry', '',
    'unschedulable_since', '', 'message', '', 'queue', '', 'popped_at', '',
    'unschedulable_count', '0', 'consecutive_errors', '0')
  to_active(key, 'UnschedulablePodAdd', '')
end

-- A new priority re-sorts the pod where it is (activeQ, podBackoffQ): not a move, nothing on the timeline.
local function set_priority(key, prio)
  local h = pk(key)
  if redis.call('HGET', h, 'priority') == prio then return end
  local q = redis.call('HGET', h, 'queue')
  if q == 'active' then
    redis.call('ZREM', KA, member(key))
    redis.call('HSET', h, 'priority', prio)
    redis.call('ZADD', KA, 0, member(key))
  elseif q == 'backoff' then
    redis.call('ZREM', KB, member(key))
    redis.call('HSET', h, 'priority', prio)
    if not errored(key) then backoff_add(key) end
  else
    redis.call('HSET', h, 'priority', prio)
  end
end
