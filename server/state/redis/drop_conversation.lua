-- One conversation forgotten, with its kept responses and its journal entries.
-- KEYS: conversation, convs, conversation's responses, journal. ARGV: conversation, response key prefix.
-- Answers how many journal entries went.
for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  redis.call('DEL', ARGV[2] .. id)
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('ZREM', KEYS[2], ARGV[1])
local gone = {}
for _, item in ipairs(redis.call('XRANGE', KEYS[4], '-', '+')) do
  local entry = cjson.decode(item[2][2])
  if entry['conversation'] == ARGV[1] then
    table.insert(gone, item[1])
  end
end
for i = 1, #gone, 500 do
  redis.call('XDEL', KEYS[4], unpack(gone, i, math.min(i + 499, #gone)))
end
return #gone
