-- A cached body's entry and its bookkeeping removed: KEYS: entry, lru,
-- sizes, total; ARGV[1] the entry's name.  The bytes it counted.
local size = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if size > 0 then
    redis.call('INCRBY', KEYS[4], -size)
end
return size
