-- Licensed under the Apache License, Version 2.0 (the "License"); you may
-- not use this file except in compliance with the License. You may obtain
-- a copy of the License at
--
--      http://www.apache.org/licenses/LICENSE-2.0
--
-- Unless required by applicable law or agreed to in writing, software
-- distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
-- WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
-- License for the specific language governing permissions and limitations
-- under the License.
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
