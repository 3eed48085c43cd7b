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
-- A proxy seals an object's fence after a read of its newest replica
-- (X-Newest) that began under the validity it names: KEYS[1] epoch,
-- KEYS[2] alive, KEYS[3] the object's generation, KEYS[4] bumps; ARGV[1]
-- a new epoch, ARGV[2] the gap in ms, ARGV[3] the token, ARGV[4] the
-- epoch and ARGV[5] the version of the bumped set the tenant (ARGV[6])
-- entered in, all three as the validity read before that read had them,
-- ARGV[7] the timestamp the read returned (X-Backend-Timestamp, its
-- metadata's) and ARGV[8] its data's (X-Backend-Data-Timestamp).  Only if
-- all three are still current: the fence becomes the highest of that
-- timestamp and the one recorded, sealed in this era with that data
-- timestamp ("<epoch>:<entered>:<data>"), keeping the generation's token
-- and TTL.  1 if sealed, else 0.
-- The gap check, the same in read.lua, bump.lua, heartbeat.lua and
-- seal.lua (a unit test holds them to it): KEYS[1] epoch, KEYS[2] alive;
-- ARGV[1] a new epoch, ARGV[2] the gap in ms.  Sets epoch, and now (ms, Redis's
-- clock).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local alive = tonumber(redis.call('GET', KEYS[2]) or '0')
local epoch = redis.call('GET', KEYS[1])
if (not epoch) or now - alive > tonumber(ARGV[2]) then
    epoch = ARGV[1]
    redis.call('SET', KEYS[1], epoch)
end
redis.call('SET', KEYS[2], now)
-- (the gap check ends)
if epoch ~= ARGV[4] or redis.call('HGET', KEYS[4], ARGV[6]) ~= ARGV[5] then
    return 0
end
local gen = redis.call('GET', KEYS[3])
if not gen or string.match(gen, '^[^|/]*') ~= ARGV[3] then
    return 0
end
local written = string.match(gen, '/(.*)$') or ''
if ARGV[7] > written then
    written = ARGV[7]
end
redis.call('SET', KEYS[3], ARGV[3] .. '|' .. epoch .. ':' .. ARGV[5] ..
           ':' .. ARGV[8] .. '/' .. written, 'KEEPTTL')
return 1
