package bus

import "github.com/redis/go-redis/v9"

// The Lua scripts feed-bus runs in Redis. Each runs atomically (Redis runs
// one script at a time, and replicates and logs its writes as one
// transaction), so that an acknowledgement and the appends it stands for
// happen together or not at all. Every key a script touches is in KEYS and
// under the deployment's hash tag, as Redis Cluster requires.

// The scripts' first lines (Redis 7 script flags). A script that may
// grow Redis's memory is refused whole while Redis is over its maxmemory
// (denyOOM: no flag), never cut short between an acknowledgement and the
// append it stands for; the caller waits and tries again (redisconn.Do).
// Scripts that only free memory, or whose growth is small and bounded
// (the events log, which acknowledges the parsed records it stands for,
// so that trimming frees far more), may run then (allowOOM).
const (
	denyOOM  = "#!lua\n"
	allowOOM = "#!lua flags=allow-oom\n"
)

// luaLib are functions the scripts share.
const luaLib = `
local function flat(a)
  local h = {}
  for i = 1, #a, 2 do h[a[i]] = a[i + 1] end
  return h
end
local function idparts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function less(a, b)
  local am, as = idparts(a)
  local bm, bs = idparts(b)
  return am < bm or (am == bm and as < bs)
end
local function groups(stream)
  local r = redis.pcall('XINFO', 'GROUPS', stream)
  if type(r) == 'table' and r.err then return {} end
  local out = {}
  for _, g in ipairs(r) do out[#out + 1] = flat(g) end
  return out
end
local function hasgroup(stream, name)
  for _, g in ipairs(groups(stream)) do
    if g['name'] == name then return true end
  end
  return false
end
`

// handOnScript appends records to a stream, in order, and acknowledges in
// the same step the entries they answer (docs/bus.md, "Acknowledgement").
// The acknowledgements come first: when every entry named was
// acknowledged already (another consumer took them over and handed them
// on), nothing is appended, so that a record is never handed on twice by
// two consumers, nor by one repeating a transaction whose reply it lost.
// An entry of a group that no longer exists (a Redis that lost its data)
// counts as not handed on.
//
//	KEYS[1]    the stream appended to; KEYS[2..] the streams acknowledged in
//	ARGV       n, then n times (index into KEYS, group, id);
//	           m, then m times (k, then k field-value pairs): the records
//	returns    {1, id...} with the appended entries' ids, or {0}
var handOnScript = redis.NewScript(denyOOM + luaLib + `
local i = 1
local nacks = tonumber(ARGV[i]); i = i + 1
local fresh = 0
for a = 1, nacks do
  local k, g, id = KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2]
  i = i + 3
  local n = redis.call('XACK', k, g, id)
  if n == 0 and not hasgroup(k, g) then n = 1 end
  fresh = fresh + n
end
if nacks > 0 and fresh == 0 then return {0} end
local nrec = tonumber(ARGV[i]); i = i + 1
local out = {1}
for r = 1, nrec do
  local nf = tonumber(ARGV[i]); i = i + 1
  local args = {KEYS[1], '*'}
  for f = 1, nf * 2 do
    args[#args + 1] = ARGV[i]
    i = i + 1
  end
  out[#out + 1] = redis.call('XADD', unpack(args))
end
return out
`)

// putRunScript appends a due record that names a run (a feed and the time
// it was due) unless that run, or a later one of the feed, was put and
// is still waiting in the stream (unread, or taken and not handed on), or
// was last seen waiting there less than the run timeout ago: a run is put
// on the bus once, so that one worker fetches it (docs/bus.md, "No
// duplicate fetches"); one still due past the timeout was lost on the way
// (refused, trimmed) and is put again. The feed's key holds "scheduled_at
// entry-id last-seen-waiting", by Redis's clock; it lives a week past its
// last put, one key per feed.
//
//	KEYS[1]    the stream; KEYS[2] the feed's run key
//	ARGV       scheduled_at in Unix milliseconds, the timeout in
//	           milliseconds, then the record's field-value pairs
//	returns    {1, id} when appended, {0, id of the earlier put}
var putRunScript = redis.NewScript(denyOOM + luaLib + `
local function waiting(stream, id)
  if #redis.call('XRANGE', stream, id, id) == 0 then return false end
  local gs = groups(stream)
  if #gs == 0 then return true end
  for _, g in ipairs(gs) do
    if #redis.call('XPENDING', stream, g['name'], id, id, 1) > 0 then return true end
    if less(g['last-delivered-id'], id) then return true end
  end
  return false
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local week = 7 * 24 * 3600 * 1000
local cur = redis.call('GET', KEYS[2])
if cur then
  local sched, id, seen = string.match(cur, '^(%d+) (%S+) (%d+)$')
  if sched and tonumber(sched) >= tonumber(ARGV[1]) then
    if waiting(KEYS[1], id) then
      redis.call('SET', KEYS[2], sched .. ' ' .. id .. ' ' .. now, 'PX', week)
      return {0, id}
    end
    if now - tonumber(seen) < tonumber(ARGV[2]) then return {0, id} end
  end
end
local id = redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
redis.call('SET', KEYS[2], ARGV[1] .. ' ' .. id .. ' ' .. now, 'PX', week)
return {1, id}
`)

// trimScript bounds a stream: first it drops the entries every consumer
// group has acknowledged (a stream without groups keeps them), then, if
// the stream is still longer than the limit, it trims it to about the
// limit (MAXLEN ~), and counts for each group the entries that trim
// dropped before the group had acknowledged them: those still pending,
// and those it had not read (its lag beyond what is left).
//
//	KEYS[1]    the stream
//	ARGV[1]    the limit (entries); 0: none
//	returns    {dropped by the limit, group, lost, group, lost, ...}; lost
//	           is -1 when Redis cannot tell a group's lag
var trimScript = redis.NewScript(allowOOM + luaLib + `
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local gs = groups(KEYS[1])
if #gs > 0 then
  local need = nil
  for _, g in ipairs(gs) do
    local p = redis.call('XPENDING', KEYS[1], g['name'])
    if p[1] > 0 and (need == nil or less(p[2], need)) then need = p[2] end
    local nxt = redis.call('XRANGE', KEYS[1], '(' .. g['last-delivered-id'], '+', 'COUNT', 1)
    if #nxt > 0 and (need == nil or less(nxt[1][1], need)) then need = nxt[1][1] end
  end
  if need == nil then
    redis.call('XTRIM', KEYS[1], 'MAXLEN', 0)
  else
    redis.call('XTRIM', KEYS[1], 'MINID', need)
  end
end
local limit = tonumber(ARGV[1])
local len = redis.call('XLEN', KEYS[1])
if limit == 0 or len <= limit then return {0} end
local dropped = redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', limit)
if dropped == 0 then return {0} end
local left = redis.call('XLEN', KEYS[1])
local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
local out = {dropped}
for _, g in ipairs(gs) do
  local lost = 0
  if #first > 0 then
    lost = #redis.call('XPENDING', KEYS[1], g['name'], '-', '(' .. first[1][1], 100000)
  end
  local lag = g['lag']
  if type(lag) == 'number' then
    if lag > left then lost = lost + lag - left end
  elseif #first == 0 or less(g['last-delivered-id'], first[1][1]) then
    lost = -1
  end
  if lost ~= 0 then
    out[#out + 1] = g['name']
    out[#out + 1] = lost
  end
end
return out
`)

// lockScripts keep a take's consumer name its own while it runs: two
// takes of one consumer would each redeliver the other's records.
var (
	// KEYS[1] the lock; ARGV[1] the token, ARGV[2] its life in ms.
	// Returns 1 if the lock is (still) the token's.
	refreshLockScript = redis.NewScript(allowOOM + `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0
`)
	releaseLockScript = redis.NewScript(allowOOM + `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
)

// putLogScript (allowOOM, see above) puts lines of the store's events log on the events stream,
// moves the log's cursor past them and acknowledges the entries whose
// records feed-store committed, in one step; the cursor must be where the
// caller read from (one put at a time moves it).
//
//	KEYS[1]    the stream appended to; KEYS[2] the cursor; KEYS[3..] the
//	           streams acknowledged in
//	ARGV       the cursor read from ("" for none), the cursor after;
//	           n, then n times (index into KEYS, group, id); m, then m
//	           records (one field "record" each)
//	returns    {1, appended} or {0, cursor} when the cursor had moved
var putLogScript = redis.NewScript(allowOOM + `
local cur = redis.call('GET', KEYS[2]) or ''
if cur ~= ARGV[1] then return {0, cur} end
local i = 3
local nacks = tonumber(ARGV[i]); i = i + 1
for a = 1, nacks do
  redis.call('XACK', KEYS[tonumber(ARGV[i])], ARGV[i + 1], ARGV[i + 2])
  i = i + 3
end
local nrec = tonumber(ARGV[i]); i = i + 1
for r = 1, nrec do
  redis.call('XADD', KEYS[1], '*', 'record', ARGV[i])
  i = i + 1
end
redis.call('SET', KEYS[2], ARGV[2])
return {1, nrec}
`)
