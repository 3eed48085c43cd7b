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
-- The leader lease: taken if free (SET NX PX), or extended if ARGV[1]
-- holds it already; one script, so no other proxy can take it between
-- the check and the write.
-- KEYS[1] the lease; ARGV[1] the owner, ARGV[2] its expiry (ms).
-- 1 if ARGV[1] holds it now, else 0.
local holder = redis.call('GET', KEYS[1])
if not holder then
    redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
    return 1
end
if holder == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
end
return 0
