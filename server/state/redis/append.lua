-- A request refused before matching, journalled. KEYS: journal, next id. ARGV: journal cap, entry.
-- Answers the entry's id.
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], n .. '-1', 'e', ARGV[2])
return n
