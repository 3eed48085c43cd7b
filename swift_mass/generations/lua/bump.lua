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
-- An object server's bump of the objects a write changed: KEYS[1]
-- epoch, KEYS[2] alive, KEYS[3..] the objects' generations; ARGV[1] a
-- new epoch, ARGV[2] the gap in ms, ARGV[3] ttl, ARGV[4] the write's
-- timestamp or '', ARGV[5] '1' if it wrote data (a PUT or DELETE; a POST
-- writes metadata only), ARGV[6..] tokens, one per object.  Each object
-- gets its token, with the highest write timestamp recorded for it, and
-- the seal of its fence, if any ("<token>[|<seal>]/<timestamp>",
-- seal.lua): a seal names its own era, so one kept across a change of
-- era is simply not trusted; a data write raises the seal's data
-- timestamp.  The epoch.
for i = 3, #KEYS do
    local old = redis.call('GET', KEYS[i])
    local written = ARGV[4]
    local seal = ''
    if old then
        local era, data = string.match(old, '^[^|/]*|([^/]*):([^:/]*)/')
        if era then
            if ARGV[5] == '1' and written > data then
                data = written
            end
            seal = '|' .. era .. ':' .. data
        end
        local seen = string.match(old, '/(.*)$')
        if seen and (written == '' or seen > written) then
            written = seen
        end
    end
    local value = ARGV[i + 3] .. seal
    if written ~= '' then
        value = value .. '/' .. written
    end
    redis.call('SET', KEYS[i], value, 'EX', ARGV[3])
end
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
return epoch
