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
-- A cached body's entry, its use recorded: KEYS[1] the entry, KEYS[2]
-- lru; ARGV[1] now, ARGV[2] the entry's name.  The entry, or nil.
local blob = redis.call('GET', KEYS[1])
if blob then
    redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
end
return blob
