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
