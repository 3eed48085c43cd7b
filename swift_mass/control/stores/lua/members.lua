-- A step of a scan of a bucket's tenant index (KEYS[1]; ARGV[1] the
-- cursor, ARGV[2] COUNT): the next cursor, and the quoted tenants
-- found, space-separated (quoted names have no space): one string to
-- split, not one reply per tenant.
local found = redis.call('SSCAN', KEYS[1], ARGV[1], 'COUNT', ARGV[2])
return {found[1], table.concat(found[2], ' ')}
