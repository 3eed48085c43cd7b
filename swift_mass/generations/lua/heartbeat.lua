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
-- A process's heartbeat: KEYS[1] epoch, KEYS[2] alive, KEYS[3] the
-- prefix of the devices' registrations (a key each, made here: under a
-- Cluster's hash tag, in the slot of the keys named); ARGV[1] a new
-- epoch, ARGV[2] the gap in ms, ARGV[3] ms a registration lives,
-- ARGV[4] this process, ARGV[5] the version of the bumped set it
-- applies, ARGV[6] how many names follow to register, then those, then
-- the names whose registration the process relied on since its last
-- heartbeat.  A field per process, "<version> <expiry ms, Redis's
-- clock>"; expired ones go.  {epoch, 1 when a registration relied on
-- had lapsed (the epoch is then new), else 0}.
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
local registering = 6 + tonumber(ARGV[6])
local lapsed = 0
for i = registering + 1, #ARGV do
    local mine = redis.call('HGET', KEYS[3] .. ARGV[i], ARGV[4])
    local until_ms = tonumber(
        string.match(mine or '', ' (%d+)$') or '0')
    if until_ms < now then
        lapsed = 1
    end
end
if lapsed == 1 then
    epoch = ARGV[1]
    redis.call('SET', KEYS[1], epoch)
end
local expires = now + tonumber(ARGV[3])
for i = 7, registering do
    local key = KEYS[3] .. ARGV[i]
    local fields = redis.call('HGETALL', key)
    for j = 1, #fields, 2 do
        local until_ms = tonumber(
            string.match(fields[j + 1], ' (%d+)$') or '0')
        if until_ms < now then
            redis.call('HDEL', key, fields[j])
        end
    end
    redis.call('HSET', key, ARGV[4], ARGV[5] .. ' ' .. expires)
    redis.call('PEXPIRE', key, ARGV[3])
end
return {epoch, lapsed}
