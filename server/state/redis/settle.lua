-- How answers went (Journal.settle), each written once; batched: what one event-loop turn settled.
-- KEYS: fin (entry id -> the delivery as JSON, without its reply), fin order (ids as written), replies
-- (entry id -> reply body), reply order ("ID SIZE" as written), reply bytes (their sum).
-- ARGV: most deliveries kept, most reply bytes kept, then per answer: entry id, delivery, reply ("" none).
-- Both hashes are cut oldest first past their bounds, as the journal itself is: the deliveries past
-- the count (twice the journal's, which XTRIM cuts only about), the replies past the count or bytes.
-- Lists are cut only after a push to them, from the length RPUSH answers, and the byte count is read and
-- written only when a reply was added: a delivery without news costs Redis no LLEN, GET or SET.
local keep, most = tonumber(ARGV[1]), tonumber(ARGV[2])
local bytes, ids, replies = nil, 0, 0
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  if redis.call('HSETNX', KEYS[1], id, ARGV[i + 1]) == 1 then
    ids = redis.call('RPUSH', KEYS[2], id)
    local reply = ARGV[i + 2]
    if reply ~= '' then
      redis.call('HSET', KEYS[3], id, reply)
      replies = redis.call('RPUSH', KEYS[4], id .. ' ' .. #reply)
      bytes = (bytes or tonumber(redis.call('GET', KEYS[5]) or '0')) + #reply
    end
  end
end
while ids > keep do
  redis.call('HDEL', KEYS[1], redis.call('LPOP', KEYS[2]))
  ids = ids - 1
end
if bytes ~= nil then
  while replies > 0 and (replies > keep or bytes > most) do
    local item = redis.call('LPOP', KEYS[4])
    local at = string.find(item, ' ', 1, true)
    redis.call('HDEL', KEYS[3], string.sub(item, 1, at - 1))
    bytes = bytes - tonumber(string.sub(item, at + 1))
    replies = replies - 1
  end
  redis.call('SET', KEYS[5], bytes)
end
return replies
