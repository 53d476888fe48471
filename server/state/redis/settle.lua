-- How answers went (Journal.settle), each written once; batched: what one event-loop turn settled and
-- no commit carried (commit.lua takes them along when one is sent in that turn).
-- KEYS: fin (entry id -> the delivery as JSON, without its reply), fin order (ids as written), replies
-- (entry id -> reply body), reply order ("ID SIZE" as written), reply bytes (their sum).
-- ARGV: most deliveries kept, most reply bytes kept, then per answer: entry id, delivery, reply ("" none).
-- Both hashes are cut oldest first past their bounds, as the journal itself is: the deliveries past
-- the count (twice the journal's, which XTRIM cuts only about), the replies past the count or bytes.
${deliveries}
settle(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], tonumber(ARGV[1]), tonumber(ARGV[2]), 3)
return 0
