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
-- What changed since a state: KEYS policy, policy:entries,
-- policy:changes; ARGV[1] the state's id ('' for none), ARGV[2] its
-- version, ARGV[3] the most entries a delta may hold.  {id, version}
-- when nothing changed (or there is no table: id ''); {id, version,
-- 'delta', tenant, entry or nil, ...}; {id, version, 'whole'} when the
-- change log cannot tell (another lineage, a version it no longer
-- reaches back to, or one from the future: the store went back).
local state = redis.call('HMGET', KEYS[1], 'id', 'version', 'floor')
local id = state[1]
if not id then
    return {'', '0'}
end
local version = tonumber(state[2] or '0')
local since = tonumber(ARGV[2])
if id == ARGV[1] and since == version then
    return {id, tostring(version)}
end
if id == ARGV[1] and since >= tonumber(state[3] or '0')
        and since < version then
    local limit = tonumber(ARGV[3])
    local tenants = redis.call('ZRANGEBYSCORE', KEYS[3],
                               '(' .. ARGV[2], '+inf', 'LIMIT', 0,
                               limit + 1)
    if #tenants <= limit then
        local reply = {id, tostring(version), 'delta'}
        for i = 1, #tenants, 500 do
            local last = math.min(i + 499, #tenants)
            local entries = redis.call('HMGET', KEYS[2],
                                       unpack(tenants, i, last))
            for j = i, last do
                reply[#reply + 1] = tenants[j]
                reply[#reply + 1] = entries[j - i + 1]
            end
        end
        return reply
    end
end
return {id, tostring(version), 'whole'}
