-- Some of a table update's changed entries (KEYS policy,
-- policy:entries, policy:changes; ARGV[1] a JSON list [tenant, entry
-- (JSON; '' none), ...]): written, and logged under the version the
-- update will take.  The version moves only once every one is in
-- (commit.lua), so a worker that sees the new version finds every
-- change of it in the log.
local next = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
    + 1
local changes = cjson.decode(ARGV[1])
for i = 1, #changes, 2 do
    if changes[i + 1] == '' then
        redis.call('HDEL', KEYS[2], changes[i])
    else
        redis.call('HSET', KEYS[2], changes[i], changes[i + 1])
    end
    redis.call('ZADD', KEYS[3], next, changes[i])
end
return next
