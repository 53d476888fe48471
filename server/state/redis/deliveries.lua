-- The writing of deliveries (settle.lua, and commit.lua, which carries those settled since the last
-- script): a Lua function written into both scripts (scripts.py), as Redis scripts include nothing.
-- fin, fins, rep, reps, bytes_key: the keys as settle.lua says; keep, most: its first two arguments;
-- from: the ARGV index of the first answer's entry id (then its delivery and reply, for each answer).
-- Lists are cut only after a push to them, from the length RPUSH answers, and the byte count is read and
-- written only when a reply was added: a delivery without news costs Redis no LLEN, GET or SET.
local function settle(fin, fins, rep, reps, bytes_key, keep, most, from)
  local bytes, ids, replies = nil, 0, 0
  for i = from, #ARGV, 3 do
    local id = ARGV[i]
    if redis.call('HSETNX', fin, id, ARGV[i + 1]) == 1 then
      ids = redis.call('RPUSH', fins, id)
      local reply = ARGV[i + 2]
      if reply ~= '' then
        redis.call('HSET', rep, id, reply)
        replies = redis.call('RPUSH', reps, id .. ' ' .. #reply)
        bytes = (bytes or tonumber(redis.call('GET', bytes_key) or '0')) + #reply
      end
    end
  end
  while ids > keep do
    redis.call('HDEL', fin, redis.call('LPOP', fins))
    ids = ids - 1
  end
  if bytes ~= nil then
    while replies > 0 and (replies > keep or bytes > most) do
      local item = redis.call('LPOP', reps)
      local at = string.find(item, ' ', 1, true)
      redis.call('HDEL', rep, string.sub(item, 1, at - 1))
      bytes = bytes - tonumber(string.sub(item, at + 1))
      replies = replies - 1
    end
    redis.call('SET', bytes_key, bytes)
  end
end
