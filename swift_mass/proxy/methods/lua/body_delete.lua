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
