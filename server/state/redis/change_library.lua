-- A change to the shared library. KEYS: library, posts, versions, unloaded. ARGV: "post" (ARGV[2] the
-- post), "clear" or "restore" (no posts left: no process has one it cannot load). Answers the library as
-- read_library.lua does.
-- The new generation, from the version counter that never repeats (seeded from Redis's clock in
-- microseconds when Redis has none)
local v = redis.call('INCR', KEYS[3])
if v == 1 then
  local t = redis.call('TIME')
  v = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', KEYS[3], v)
end
if ARGV[1] == 'post' then
  redis.call('RPUSH', KEYS[2], ARGV[2])
else
  redis.call('DEL', KEYS[2], KEYS[4])
  redis.call('HSET', KEYS[1], 'e', v, 'b', ARGV[1] == 'clear' and 'none' or 'start')
end
redis.call('HSET', KEYS[1], 'g', v)
local h = redis.call('HMGET', KEYS[1], 'g', 'e', 'b')
return {h[1] or '0', h[2] or '0', h[3] or 'start', redis.call('LRANGE', KEYS[2], 0, -1)}
