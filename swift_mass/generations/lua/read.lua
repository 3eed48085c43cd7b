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
-- A proxy's read of an object's generation: KEYS[1] epoch, KEYS[2]
-- alive, KEYS[3] the object's generation, KEYS[4] bumps; ARGV[1] a new
-- epoch, ARGV[2] the gap in ms, ARGV[3] a new generation, ARGV[4] its
-- TTL (seconds), ARGV[5] the tenant.  {epoch, generation, the version
-- of the bumped set the tenant entered in ('' when it is not in it)}.
--
-- A generation is written only when there is none (a lost key must
-- not bring an older token back); the bumps renew its TTL.  The gap
-- check's SET of alive is the read's one unconditional write: a Redis
-- that refuses the writers' bumps refuses this read too.
local gen = redis.call('GET', KEYS[3])
if not gen then
    gen = ARGV[3]
    redis.call('SET', KEYS[3], gen, 'EX', ARGV[4])
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
local entered = redis.call('HGET', KEYS[4], ARGV[5])
if not entered then
    entered = ''
end
return {epoch, gen, entered}
