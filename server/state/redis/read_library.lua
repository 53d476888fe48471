-- The shared library. KEYS: library, posts. Answers {generation, epoch, base ("start" or "none"), posts}.
local h = redis.call('HMGET', KEYS[1], 'g', 'e', 'b')
return {h[1] or '0', h[2] or '0', h[3] or 'start', redis.call('LRANGE', KEYS[2], 0, -1)}
