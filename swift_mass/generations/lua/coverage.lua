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
-- Which devices have an object server that bumps their writes: KEYS
-- registrations of devices.  Per device the lowest version of the
-- bumped set a live process applies, or -1 when none is registered.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 +
    math.floor(tonumber(time[2]) / 1000)
local lowest = {}
for i = 1, #KEYS do
    local low = -1
    local fields = redis.call('HGETALL', KEYS[i])
    for j = 1, #fields, 2 do
        local version, until_ms = string.match(
            fields[j + 1], '^(%d+) (%d+)$')
        if version and tonumber(until_ms) >= now then
            version = tonumber(version)
            if low < 0 or version < low then
                low = version
            end
        end
    end
    lowest[i] = low
end
return lowest
