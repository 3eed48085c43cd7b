# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Where cached object bodies live: Redis (shared by all proxies), Swift's
memcache (``swift.cache``, shared) or a worker-local LRU.

Each keeps whole entries (the body, the response headers Swift sent with
it and the validity it was fetched under) for at most ``ttl`` seconds, and
honours a byte budget with least-recently-used eviction: the local LRU and
Redis count the bytes themselves; memcache's budget is memcached's own
memory limit (``-m``), which it enforces with its own LRU.  Errors of a
shared backend propagate; the cache treats them as misses.
"""
import json
import time

import cachetools

from swift_mass.lua import read_script

# memcached refuses items over its item size limit (1 MiB by default); an
# entry is its body plus headers, so keep well under it.
MEMCACHE_MAX_ITEM = 1024 * 1024 - 16 * 1024
# What a body is kept and sent in: the proxy's own chunk size
# (object_chunk_size, client_chunk_size), under glibc's mmap threshold.
CHUNK = 64 * 1024


class Entry(object):
    """A cached GET response: ``validity`` (None: fetched while the
    generations could not be read, so only a backend check makes it
    servable), ``headers`` (a list of pairs, as Swift's proxy sent them,
    Content-Length aside) and the body as ``chunks``, bytes of at most
    :data:`CHUNK` each (larger ones, or the body in one piece, are cut
    so).

    The body is kept in chunks, never joined: a hit sends them as they
    are, and neither the decrypter nor the socket ever gets one large
    buffer (each fresh buffer over glibc's mmap threshold costs page
    faults, more than the rest of a hit)."""
    __slots__ = ('validity', 'headers', 'chunks', 'length')

    def __init__(self, validity, headers, chunks):
        self.validity = validity
        self.headers = headers
        if isinstance(chunks, (bytes, bytearray, memoryview)):
            chunks = (chunks,)
        self.chunks = tuple(piece for chunk in chunks for piece in (
            (chunk,) if len(chunk) <= CHUNK else cut(chunk)))
        self.length = sum(len(chunk) for chunk in self.chunks)

    def header(self, name):
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    @property
    def body(self):
        """The body in one piece (for a range, and for shared backends,
        which store one value)."""
        return b''.join(self.chunks)

    @property
    def size(self):
        return self.length + sum(len(k) + len(v) for k, v in self.headers)

    def dump(self):
        meta = json.dumps({'v': self.validity, 'h': self.headers},
                          separators=(',', ':')).encode('utf-8')
        return b''.join((meta, b'\n') + self.chunks)

    @classmethod
    def load(cls, blob):
        end = blob.index(b'\n')
        meta = json.loads(blob[:end])
        return cls(meta['v'], [tuple(pair) for pair in meta['h']],
                   cut(blob, end + 1))


def cut(data, start=0):
    """``data[start:]`` in chunks of at most :data:`CHUNK` bytes."""
    return [bytes(data[i:i + CHUNK]) for i in range(start, len(data), CHUNK)]


class Bodies(object):
    name = None

    def get(self, key):
        """The Entry cached for ``key``, or None."""
        raise NotImplementedError

    def put(self, key, entry):
        raise NotImplementedError

    def delete(self, key):
        raise NotImplementedError

    def fits(self, size):
        """Whether an entry of ``size`` bytes may be stored at all."""
        return True


class LocalBodies(Bodies):
    """A worker-local LRU of at most ``budget`` bytes of entries."""
    name = 'local'

    def __init__(self, budget, ttl, clock=time.time):
        self.budget = int(budget)
        self.ttl = float(ttl)
        self._entries = cachetools.TTLCache(
            self.budget, self.ttl, timer=clock,
            getsizeof=lambda entry: entry.size)

    def __len__(self):
        return len(self._entries)

    @property
    def used(self):
        """The bytes of the entries held."""
        return self._entries.currsize

    def get(self, key):
        return self._entries.get(key)

    def put(self, key, entry):
        if self.fits(entry.size):
            self._entries[key] = entry

    def delete(self, key):
        self._entries.pop(key, None)

    def fits(self, size):
        return size <= self.budget


class RedisBodies(Bodies):
    """Entries in Redis, one key each with a TTL, plus the bookkeeping that
    keeps their total under ``budget`` bytes: a sorted set of entries by
    last use, a hash of their sizes and a running total.  Each operation is
    one script (one round trip, atomic), so proxies sharing the Redis
    never push the total over the budget between them.  An entry that
    expired by TTL is counted until it is evicted, so the bytes really
    held never exceed the counted total.

    Keys, under ``prefix`` (the generations', :mod:`swift_mass.generations`):
    ``b:<key>`` an entry, ``lru``, ``sizes`` and ``bytes``.  A put's script
    evicts entries it names from their prefix, so on a Redis Cluster all
    must be in one slot: there the prefix is a hash tag (``{mass}:cache:``,
    :func:`swift_mass.redis_client.key_prefix`), and one master holds every
    body, within the one budget."""
    name = 'redis'

    #: the scripts (lua/body_<name>.lua, where each says what it takes
    #: and returns), read once
    _GET = read_script(__package__, 'body_get')
    _PUT = read_script(__package__, 'body_put')
    _DELETE = read_script(__package__, 'body_delete')

    def __init__(self, client, budget, ttl, prefix='mass:cache:',
                 clock=time.time):
        self.client = client
        self.budget = int(budget)
        self.ttl_ms = int(float(ttl) * 1000)
        self.prefix = prefix
        self.clock = clock
        self._get = client.register_script(self._GET)
        self._put = client.register_script(self._PUT)
        self._delete = client.register_script(self._DELETE)

    @property
    def entry_prefix(self):
        return self.prefix + 'b:'

    def _keys(self, key):
        return [self.entry_prefix + key, self.prefix + 'lru',
                self.prefix + 'sizes', self.prefix + 'bytes']

    def get(self, key):
        keys = self._keys(key)
        blob = self._get(keys=keys[:2], args=[self.clock(), key])
        return Entry.load(blob) if blob is not None else None

    def put(self, key, entry):
        self._put(keys=self._keys(key), args=[
            entry.dump(), self.ttl_ms, self.clock(), self.budget, key,
            self.entry_prefix])

    def delete(self, key):
        self._delete(keys=self._keys(key), args=[key])

    def used(self):
        """The bytes counted against the budget."""
        return int(self.client.get(self.prefix + 'bytes') or 0)

    def fits(self, size):
        return size <= self.budget


class MemcacheBodies(Bodies):
    """Entries in Swift's memcache (``swift.cache``), found on the first
    request, since the middleware is built before the ``cache`` filter
    puts it in the environ."""
    name = 'memcache'

    def __init__(self, ttl, memcache=None, prefix='mass-cache/'):
        self.memcache = memcache
        self.ttl = max(1, int(ttl))
        self.prefix = prefix

    def _key(self, key):
        return self.prefix + key

    def get(self, key):
        if self.memcache is None:
            return None
        blob = self.memcache.get(self._key(key), raise_on_error=True)
        if not isinstance(blob, bytes):
            return None
        return Entry.load(blob)

    def put(self, key, entry):
        if self.memcache is None:
            return
        blob = entry.dump()
        if len(blob) > MEMCACHE_MAX_ITEM:
            return
        self.memcache.set(self._key(key), blob, serialize=False,
                          time=self.ttl, raise_on_error=True)

    def delete(self, key):
        if self.memcache is not None:
            self.memcache.delete(self._key(key))

    def fits(self, size):
        return size <= MEMCACHE_MAX_ITEM
