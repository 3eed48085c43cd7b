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
-- The end of a table update: the new version (a new lineage if the
-- store had lost the table's state), the change log trimmed (its
-- oldest, at most ARGV[6] of them).  KEYS policy, policy:entries,
-- policy:changes; ARGV[1] the id of the state the writer started from,
-- ARGV[2] its version, ARGV[3] an id for a new lineage, ARGV[4] how
-- many entries the writer's table has, ARGV[5] CHANGES_KEPT.
-- {id, version, exact, whole, fresh}: exact, no other write came in
-- since the writer's state; whole, the store has as many entries as
-- the writer's table (if not, and the writer's state was the store's
-- or the lineage is new, the store lost some: the writer puts the
-- whole table); fresh, the lineage is new.
local id = redis.call('HGET', KEYS[1], 'id')
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
local exact = version == tonumber(ARGV[2]) + 1 and
    (id or '') == ARGV[1]
local fresh = not id
if fresh then
    id = ARGV[3]
    redis.call('UNLINK', KEYS[3])
    redis.call('HSET', KEYS[1], 'id', id, 'floor', version)
else
    local extra = math.min(
        redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[5]),
        tonumber(ARGV[6]))
    if extra > 0 then
        local cut = redis.call('ZRANGE', KEYS[3], extra - 1,
                               extra - 1, 'WITHSCORES')
        redis.call('HSET', KEYS[1], 'floor', cut[2])
        redis.call('ZREMRANGEBYRANK', KEYS[3], 0, extra - 1)
    end
end
local whole = redis.call('HLEN', KEYS[2]) == tonumber(ARGV[4])
return {id, version, exact and 1 or 0, whole and 1 or 0,
        fresh and 1 or 0}
