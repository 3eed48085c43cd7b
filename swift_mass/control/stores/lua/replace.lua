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
