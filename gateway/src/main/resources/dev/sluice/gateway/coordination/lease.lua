-- One replica's lease renewal: heartbeat, demand report and grant, in one round trip (docs/scale-out.md).
-- KEYS[1] {sluice}:fleet  hash: member key (replica id '#' generation) -> cjson of the member
-- ARGV[1] replica id, ARGV[2] its address, ARGV[3] its generation (chosen by the process at start, unique
-- per incarnation: a renewal whose answer was lost and is sent again never makes a second member), ARGV[4] lease ttl (ms),
-- ARGV[5] cjson {resource: [capacity, usage, demand], ...}
-- ARGV[6] (optional) cjson {prefill worker url: prompt tokens routed there lately}: the share guard's figures,
-- kept with the member and returned with it, so that each replica judges the fleet's recent load
-- Returns cjson {gen, now, joined, grants: {resource: n}, members: [...]}.
-- Time is the server's (TIME), never a replica's clock.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- the generation stays a string: cjson writes numbers with 14 significant digits
local id, addr, gen, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local want = cjson.decode(ARGV[5])

local others = {}
local selfKey = id .. '#' .. gen
local joined = false
local live = false
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local m = cjson.decode(all[i + 1])
  if m.exp < now then
    redis.call('HDEL', KEYS[1], all[i]) -- lapsed: its shares are free (a renewal from it later joins again, from nothing)
  elseif all[i] == selfKey then
    live = true
  else
    m.key = all[i]
    others[#others + 1] = m
  end
end
if not live then
  -- a new incarnation, or one whose lease lapsed while it was away (its old entry is gone: it is
  -- never counted twice); the safety cap below keeps it from taking what the others now hold
  joined = true
end

local grants = {}
local leases = {}
for name, v in pairs(want) do
  local cap, usage, demand = v[1], v[2], v[3]
  local entries = { { key = selfKey, d = demand } }
  local held = 0
  for _, m in ipairs(others) do
    local r = m.r[name]
    if r then
      entries[#entries + 1] = { key = m.key, d = r[3] }
      held = held + math.max(r[1], r[2]) -- what it may still be using: its grant, or more while it drains
    end
  end
  local n = #entries
  local total = 0
  for _, e in ipairs(entries) do total = total + e.d end
  -- proportional to demand, work-conserving: spare capacity split evenly, else C * d / D
  local given = 0
  for _, e in ipairs(entries) do
    local x
    if total <= cap then x = e.d + (cap - total) / n else x = cap * e.d / total end
    e.floor = math.floor(x)
    e.frac = x - e.floor
    given = given + e.floor
  end
  -- the units left by the floors go to the largest fractions (ties: by key), the same for every caller
  table.sort(entries, function(a, b)
    if a.frac ~= b.frac then return a.frac > b.frac end
    return a.key < b.key
  end)
  local target = 0
  for i, e in ipairs(entries) do
    local x = e.floor
    if i <= cap - given then x = x + 1 end
    if e.key == selfKey then target = x end
  end
  -- safety: never more than what the others do not hold, so grants never over-commit C
  local grant = math.max(0, math.min(target, cap - held))
  grants[name] = grant
  leases[name] = { grant, usage, demand, cap }
end

local me = { id = id, addr = addr, gen = gen, seen = now, exp = now + ttl, r = leases }
if ARGV[6] then me.l = cjson.decode(ARGV[6]) end
redis.call('HSET', KEYS[1], selfKey, cjson.encode(me))
redis.call('PEXPIRE', KEYS[1], ttl * 10)
me.key = selfKey
others[#others + 1] = me
return cjson.encode({ gen = gen, now = now, joined = joined, grants = grants, members = others })
