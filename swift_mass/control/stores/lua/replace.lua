-- A whole table in: KEYS policy, policy:entries, policy:changes, the
-- new entries (written meanwhile; absent for an empty table); ARGV[1]
-- the new lineage's id.  Its version follows the last one.
redis.call('UNLINK', KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('RENAME', KEYS[4], KEYS[2])
    redis.call('PERSIST', KEYS[2])
end
redis.call('UNLINK', KEYS[3])
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'floor', version)
return version
