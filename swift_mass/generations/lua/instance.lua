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
-- The defence against a Redis gone back in time, run on every new
-- connection before it serves a command: KEYS[1] instance, KEYS[2]
-- epoch; ARGV[1] the identity (run_id) of the server the connection
-- reached, ARGV[2] a new epoch.  A server that is not the one whose
-- identity Redis holds (restarted, or a replica promoted) gets the new
-- epoch.  1 if it did, else 0.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[1])
    redis.call('SET', KEYS[2], ARGV[2])
    return 1
end
return 0
