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
-- Counters of some tenants in a bucket: KEYS[1] the bucket's tenant
-- index, which it does not read (a Cluster sends a script to the node
-- holding the slot of its keys, and one that names none to any node);
-- ARGV[1] the prefix of their keys, ARGV[2] the prefixes of the fields
-- wanted (space-separated; empty: all), ARGV[3] quoted tenants,
-- space-separated.  A line per tenant, in their order, of "field value
-- field value...", empty when it has none (expired since the index was
-- read, or none wanted).
local base = ARGV[1]
local wanted = {}
for prefix in string.gmatch(ARGV[2], '%S+') do
    wanted[#wanted + 1] = prefix
end
local lines = {}
for tenant in string.gmatch(ARGV[3], '%S+') do
    local fields = redis.call('HGETALL', base .. tenant)
    local kept = {}
    for j = 1, #fields, 2 do
        local keep = #wanted == 0
        for k = 1, #wanted do
            if string.sub(fields[j], 1, #wanted[k]) == wanted[k] then
                keep = true
                break
            end
        end
        if keep then
            kept[#kept + 1] = fields[j]
            kept[#kept + 1] = fields[j + 1]
        end
    end
    lines[#lines + 1] = table.concat(kept, ' ')
end
return table.concat(lines, '\n')
