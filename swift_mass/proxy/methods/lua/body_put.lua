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
-- A cached body's entry stored, the least recently used ones evicted to
-- keep the total under the budget: KEYS: entry, lru, sizes, total;
-- ARGV: blob, ttl ms, now, budget, name, key prefix of entries.  1 if
-- stored, 0 if the entry alone is over the budget.
local size = string.len(ARGV[1])
local budget = tonumber(ARGV[4])
if size > budget then
    return 0
end
local old = tonumber(redis.call('HGET', KEYS[3], ARGV[5]) or '0')
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('HSET', KEYS[3], ARGV[5], size)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
local total = redis.call('INCRBY', KEYS[4], size - old)
while total > budget do
    local victim = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    if not victim then
        break
    end
    local vsize = tonumber(redis.call('HGET', KEYS[3], victim) or '0')
    redis.call('ZREM', KEYS[2], victim)
    redis.call('HDEL', KEYS[3], victim)
    redis.call('DEL', ARGV[6] .. victim)
    total = redis.call('INCRBY', KEYS[4], -vsize)
end
return 1
