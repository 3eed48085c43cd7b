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
-- The leader's bumped set: KEYS[1] bumps, KEYS[2] bumps:version; ARGV
-- the tenants to bump.  A change takes a new version; tenants that
-- enter get it.  The set's version.
local want = {}
for i = 1, #ARGV do
    want[ARGV[i]] = true
end
local gone = {}
for _, tenant in ipairs(redis.call('HKEYS', KEYS[1])) do
    if want[tenant] then
        want[tenant] = nil
    else
        table.insert(gone, tenant)
    end
end
local added = {}
for tenant in pairs(want) do
    table.insert(added, tenant)
end
if #gone == 0 and #added == 0 then
    return tonumber(redis.call('GET', KEYS[2]) or '0')
end
local version = redis.call('INCR', KEYS[2])
for _, tenant in ipairs(gone) do
    redis.call('HDEL', KEYS[1], tenant)
end
for _, tenant in ipairs(added) do
    redis.call('HSET', KEYS[1], tenant, version)
end
return version
