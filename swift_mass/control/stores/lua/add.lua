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
-- A flush's tenants of one bucket: KEYS[1] buckets, KEYS[2] the
-- bucket's tenant index; ARGV[1] the prefix of its counter keys,
-- ARGV[2] ttl, ARGV[3] the bucket, ARGV[4] its expiry, ARGV[5] now,
-- ARGV[6] {quoted tenant: {field: delta}} (JSON).
--
-- A script runs whole or not at all, but a flush is several: between
-- two, nothing is atomic, and a failure leaves the earlier ones
-- written.  The indexes still never name counters that were not
-- written: each script adds tenants to the index after their counters,
-- so whatever prefix of a flush Redis took (a script that stopped
-- part way included), an index entry only follows counters it names.
-- Counters without an index entry (a failure between the two) are
-- hidden, never wrong; the worker hands the failed rest to the
-- fallback store.
--
-- The bucket index is scored by expiry, so it is trimmed without
-- knowing how long a bucket is; GT keeps the latest expiry.  Scores
-- come from the proxies' clocks: only a skew larger than ttl would
-- trim a live bucket.
local base, ttl = ARGV[1], ARGV[2]
local tenants = {}
for tenant, counts in pairs(cjson.decode(ARGV[6])) do
    local key = base .. tenant
    for field, delta in pairs(counts) do
        redis.call('HINCRBY', key, field, string.format('%d', delta))
    end
    redis.call('EXPIRE', key, ttl)
    tenants[#tenants + 1] = tenant
end
for i = 1, #tenants, 500 do
    redis.call('SADD', KEYS[2],
               unpack(tenants, i, math.min(i + 499, #tenants)))
end
redis.call('EXPIRE', KEYS[2], ttl)
redis.call('ZADD', KEYS[1], 'GT', ARGV[4], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[5])
redis.call('EXPIRE', KEYS[1], ttl)
return #tenants
