-- A process's reports of the posts it cannot load. KEYS: library, unloaded. ARGV: the generation loaded,
-- the process, its reports as JSON ("" none). Written only while that generation is current: a report
-- never outlives the posts it is about. Answers 1 when written, else 0.
if tonumber(redis.call('HGET', KEYS[1], 'g') or '0') ~= tonumber(ARGV[1]) then
  return 0
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[2], ARGV[2])
else
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
return 1
