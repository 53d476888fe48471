-- The commit of one or more turns of one conversation, decided one after the other (scripts.py).
-- ${ttl}: how long an idle conversation is kept (seconds); ${cap}: about how many journal entries are
-- kept; ${prefix}: the keys' prefix. They are written into the script, which costs Redis a little less
-- than an argument.
-- KEYS: the conversation, its responses, then one kept-response key per turn.
-- ARGV: expected version, new states ("" unchanged), conversation, now, expected library generation,
-- the number of turns, then per turn: journal entry, used step ("" none), response ("" none), response id.
-- Then, optionally, the deliveries settled since the last script (store.py's settle), as settle.lua takes
-- them: most deliveries kept, most reply bytes kept, then per answer: entry id, delivery, reply ("" none);
-- written first, whatever the commit answers (they are about earlier turns).
-- Answers {1, first entry id, version} (the turns' entry ids follow one another); when the library
-- changed, {2}; when the version is not the expected one, {0, version, states}.
${deliveries}
local settled = 7 + 4 * tonumber(ARGV[6])
if #ARGV > settled then
  settle('${prefix}fin', '${prefix}fin:order', '${prefix}rep', '${prefix}rep:order', '${prefix}rep:bytes',
    tonumber(ARGV[settled]), tonumber(ARGV[settled + 1]), settled + 2)
end
if tonumber(redis.call('HGET', '${prefix}lib', 'g') or '0') ~= tonumber(ARGV[5]) then
  return {2}
end
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v ~= tonumber(ARGV[1]) then
  return {0, v, redis.call('HGET', KEYS[1], 's') or ''}
end
local ttl = ${ttl}
if ARGV[2] ~= '' then
  -- a new version, from one counter that never repeats: seeded from Redis's clock in microseconds
  -- when Redis has none (a fresh or restarted Redis)
  v = redis.call('INCR', '${prefix}version')
  if v == 1 then
    local t = redis.call('TIME')
    v = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('SET', '${prefix}version', v)
  end
  redis.call('HSET', KEYS[1], 'v', v, 's', ARGV[2])
elseif v == 0 then
  redis.call('HSET', KEYS[1], 'v', 0, 's', '{}')
end
redis.call('EXPIRE', KEYS[1], ttl)
local now = tonumber(ARGV[4])
redis.call('ZADD', '${prefix}convs', now, ARGV[3])
local count = tonumber(ARGV[6])
local first = redis.call('INCRBY', '${prefix}next', count) - count + 1
for i = 0, count - 1 do
  local at = 7 + 4 * i
  redis.call('XADD', '${prefix}journal', (first + i) .. '-1', 'e', ARGV[at])
  if ARGV[at + 1] ~= '' then
    redis.call('SADD', '${prefix}used', ARGV[at + 1])
  end
  if ARGV[at + 2] ~= '' then
    redis.call('SET', KEYS[3 + i], ARGV[at + 2], 'EX', ttl)
    redis.call('SADD', KEYS[2], ARGV[at + 3])
    redis.call('EXPIRE', KEYS[2], ttl)
  end
end
if (first + count - 1) % 64 < count then  -- an id a multiple of 64 written: forget the conversations
  -- idle past the ttl, cut the journal (the batches' ids follow one another: each multiple is seen once)
  redis.call('ZREMRANGEBYSCORE', '${prefix}convs', '-inf', now - ttl)
  redis.call('XTRIM', '${prefix}journal', 'MAXLEN', '~', ${cap})
end
return {1, first, v}
