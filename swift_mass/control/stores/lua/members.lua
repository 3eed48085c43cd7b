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
-- A step of a scan of a bucket's tenant index (KEYS[1]; ARGV[1] the
-- cursor, ARGV[2] COUNT): the next cursor, and the quoted tenants
-- found, space-separated (quoted names have no space): one string to
-- split, not one reply per tenant.
local found = redis.call('SSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
return {found[1], table.concat(found[2], ' ')}
