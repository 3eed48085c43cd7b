-- A cached body's entry, its use recorded: KEYS[1] the entry, KEYS[2]
-- lru; ARGV[1] now, ARGV[2] the entry's name.  The entry, or nil.
local blob = redis.call('GET', KEYS[1])
if blob then
    redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
return blob
