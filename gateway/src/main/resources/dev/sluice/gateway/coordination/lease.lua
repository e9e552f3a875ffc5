-- One replica's lease renewal: heartbeat, demand report and grant, in one round trip (docs/scale-out.md).
-- KEYS[1] the fleet's key ({sluice}:fleet, or {sluice:<fleet>}:fleet)  hash: member key (replica id '#' generation)
--         -> cjson of the member
-- ARGV[1] replica id, ARGV[2] its address, ARGV[3] its generation (chosen by the process at start, unique
-- per incarnation: a renewal whose answer was lost and is sent again never makes a second member), ARGV[4] lease ttl (ms),
-- ARGV[5] cjson {resource: [capacity, usage, demand, enforced, headroom], ...}: enforced is the grant this replica
--         admits on now (until the answer to this renewal is applied), headroom the part of demand that is not work
--         (both optional: a replica of an older version sends three numbers)
-- ARGV[6] (optional) cjson {prefill worker url: prompt tokens routed there lately}: the share guard's figures,
-- kept with the member and returned with it, so that each replica judges the fleet's recent load
-- ARGV[7] (optional) '1': this replica is draining (it reports no headroom, and takes no spare)
-- Returns cjson {gen, now, joined, grants: {resource: n}, targets: {resource: n}, members: [...]}.
-- Time is the server's (TIME), never a replica's clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- the generation stays a string: cjson writes numbers with 14 significant digits
local id, addr, gen, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local want = cjson.decode(ARGV[5])
local draining = ARGV[7] == '1'

local others = {}
local selfKey = id .. '#' .. gen
local joined = false
local previous = nil
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local m = cjson.decode(all[i + 1])
  if m.exp < now then
    redis.call('HDEL', KEYS[1], all[i]) -- lapsed: its shares are free (its holder fenced itself before this)
  elseif all[i] == selfKey then
    previous = m
  else
    m.key = all[i]
    others[#others + 1] = m
  end
end
if previous == nil then
  -- a new incarnation, or one whose lease lapsed while it was away (its old entry is gone: it is
  -- never counted twice); the safety cap below keeps it from taking what the others now hold
  joined = true
end

-- each member's part of one resource: work (need) first, then headroom, then what is spare
local function targets(cap, entries)
  local d, need, head, n, open = 0, 0, 0, #entries, 0
  for _, e in ipairs(entries) do
    d = d + e.d
    need = need + (e.d - e.h)
    head = head + e.h
    if not e.dr then open = open + 1 end
  end
  local given = 0
  for _, e in ipairs(entries) do
    local x
    if d <= cap then
      -- everyone's demand fits: the spare goes evenly to those not draining (all, if all are)
      local spare = cap - d
      if open == 0 then x = e.d + spare / n
      elseif e.dr then x = e.d
      else x = e.d + spare / open end
    elseif need <= cap then
      -- the work fits, the headroom does not: work in full, the rest by headroom
      x = (e.d - e.h) + (cap - need) * e.h / head
    else
      x = cap * (e.d - e.h) / need
    end
    e.floor = math.floor(x)
    e.frac = x - e.floor
    given = given + e.floor
  end
  -- the units left by the floors go to the largest fractions (ties: by key), the same for every caller
  table.sort(entries, function(a, b)
    if a.frac ~= b.frac then return a.frac > b.frac end
    return a.key < b.key
  end)
  local out = {}
  for i, e in ipairs(entries) do
    local x = e.floor
    if i <= cap - given then x = x + 1 end
    out[e.key] = x
  end
  return out
end

local grants = {}
local targetsOut = {}
local leases = {}
for name, v in pairs(want) do
  local cap, usage, demand = v[1], v[2], v[3]
  local headroom = math.min(v[5] or 0, demand)
  local enforced = v[4]
  if enforced == nil then
    -- an older replica: what it admits on now is the last grant it was given
    enforced = 0
    if previous and previous.r[name] then enforced = previous.r[name][1] end
  end
  local entries = { { key = selfKey, d = demand, h = headroom, dr = draining } }
  local held = 0
  for _, m in ipairs(others) do
    local r = m.r[name]
    if r then
      entries[#entries + 1] = { key = m.key, d = r[3], h = r[6] or 0, dr = m.dr == true }
      -- what it may still be using: its grant, what it admitted on when it asked (until it applies the answer),
      -- or more while it drains
      held = held + math.max(r[1], r[2], r[5] or 0)
    end
  end
  local target = targets(cap, entries)[selfKey]
  -- safety: never more than what the others do not hold, so grants never over-commit C
  local grant = math.max(0, math.min(target, cap - held))
  grants[name] = grant
  targetsOut[name] = target
  leases[name] = { grant, usage, demand, cap, math.max(enforced, grant), headroom }
end

local me = { id = id, addr = addr, gen = gen, seen = now, exp = now + ttl, r = leases, dr = draining }
if ARGV[6] then me.l = cjson.decode(ARGV[6]) end
redis.call('HSET', KEYS[1], selfKey, cjson.encode(me))
redis.call('PEXPIRE', KEYS[1], ttl * 10)
me.key = selfKey
others[#others + 1] = me
return cjson.encode({ gen = gen, now = now, joined = joined, grants = grants, targets = targetsOut, members = others })
