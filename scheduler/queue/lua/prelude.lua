local P = ARGV[1]
local KA, KB, KU, KI, KC, KM = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local INITIAL, MAXB = tonumber(ARGV[2]), tonumber(ARGV[3])
local NOW_S = ARGV[4]
local NOW = tonumber(NOW_S)

local function pk(key) return P .. ':pod:' .. key end
local function fmt(x) return string.format('%.17g', x) end
local function num(s)
  if s == false or s == nil or s == '' then return nil end
  return tonumber(s)
end

-- PrioritySort.Less as a byte-ordered string; the key breaks ties.
local function member(key)
  local h = pk(key)
  local prio = tonumber(redis.call('HGET', h, 'priority'))
  local ts = tonumber(redis.call('HGET', h, 'timestamp'))
  return string.format('%010.0f|%019.0f|', 2147483647 - prio, math.floor(ts * 1e6 + 0.5)) .. key
end
local function key_of(m) return string.match(m, '^%d+|%d+|(.*)$') end

local function unlink(key)
  local h = pk(key)
  local q = redis.call('HGET', h, 'queue')
  if q == 'active' then redis.call('ZREM', KA, member(key))
  elseif q == 'backoff' then redis.call('ZREM', KB, key)
  elseif q == 'unschedulable' then redis.call('ZREM', KU, key)
  elseif q == 'in_flight' then redis.call('ZREM', KI, key) end
  redis.call('HSET', h, 'queue', '')
end

-- As backoffQueue.calculateBackoffDuration.
local function backoff_duration(attempts)
  if attempts == 0 then return 0 end
  local d = INITIAL
  for _ = 1, attempts - 1 do
    if d > MAXB - d then return MAXB end
    d = d + d
  end
  return d
end

local function expiry_of(key)
  local h = pk(key)
  local e = num(redis.call('HGET', h, 'backoff_expiry'))
  if e == nil then
    e = tonumber(redis.call('HGET', h, 'timestamp'))
        + backoff_duration(tonumber(redis.call('HGET', h, 'attempts')))
    redis.call('HSET', h, 'backoff_expiry', fmt(e))
  end
  return e
end

local function backing_off(key)
  local e = num(redis.call('HGET', pk(key), 'backoff_expiry'))
  return e ~= nil and e > NOW
end

local function to_active(key)
  local h = pk(key)
  if redis.call('HGET', h, 'initial_attempt_timestamp') == '' then
    redis.call('HSET', h, 'initial_attempt_timestamp', NOW_S)
  end
  redis.call('HSET', h, 'queue', 'active', 'unschedulable_since', '')
  redis.call('ZADD', KA, 0, member(key))
end

local function to_backoff(key)
  local e = expiry_of(key)
  redis.call('HSET', pk(key), 'queue', 'backoff', 'unschedulable_since', '')
  redis.call('ZADD', KB, fmt(e), key)
end

-- Returns how many went to backoffQ (the rest went to activeQ), for queue_incoming_pods_total.
local function move_to_active_or_backoff(keys)
  local backoff = 0
  for _, key in ipairs(keys) do
    unlink(key)
    if backing_off(key) then to_backoff(key); backoff = backoff + 1 else to_active(key) end
  end
  redis.call('SET', KM, redis.call('GET', KC) or '0')
  return backoff
end

local function new_pod(key, prio)
  redis.call('HSET', pk(key), 'priority', prio, 'timestamp', NOW_S, 'attempts', '0',
    'initial_attempt_timestamp', '', 'cycle', '0', 'backoff_expiry', '',
    'unschedulable_since', '', 'message', '', 'queue', '', 'popped_at', '')
  to_active(key)
end

local function set_priority(key, prio)
  local h = pk(key)
  if redis.call('HGET', h, 'priority') == prio then return end
  if redis.call('HGET', h, 'queue') == 'active' then
    unlink(key)
    redis.call('HSET', h, 'priority', prio)
    to_active(key)
  else
    redis.call('HSET', h, 'priority', prio)
  end
end
