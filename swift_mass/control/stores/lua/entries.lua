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
-- A step of a scan of the entries (KEYS[1]; ARGV[1] cursor, ARGV[2]
-- COUNT): the next cursor, the tenants (a JSON list) and their
-- entries (a JSON list): two strings to parse, not two per tenant.
local found = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
local tenants, entries = {}, {}
for i = 1, #found[2], 2 do
    tenants[#tenants + 1] = found[2][i]
    entries[#entries + 1] = found[2][i + 1]
end
if #tenants == 0 then
    return {found[1], '[]', '[]'}
end
return {found[1], cjson.encode(tenants),
        '[' .. table.concat(entries, ',') .. ']'}
