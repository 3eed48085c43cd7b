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
"""Per-object generations in Redis: what makes a cached body safe to serve.

Shared by both halves of Mass.  The object servers' ``mass_queue`` gives an
object a new generation after each write of it has reached the disk and
before the object server answers
(:meth:`.writer.GenerationWriter.bump`), so every write is covered,
whoever sent it: a proxy with or without ``mass``, Swift's own daemons
(object-expirer, reaper, reconciler, container-sync) through their
internal clients; only a move's writes that keep the version a reader
sees are not (``X-Backend-Mass-Keeps-Version``: docs/cache.md, "A move
keeps cached bodies").  A proxy's cache stores a body with the generation it
read before the body was fetched, only if the generation is still the same
once the whole body arrived, and serves it only while it is
(:meth:`.reader.GenerationReader.read`); the write's X-Timestamp is
recorded too, the highest of all writes seen, so a body older than the
last write (read from a replica the write has not reached) is never
stored.

A generation is a random token, not a counter, and every validity also
holds the *epoch*, one more token, which replaces every generation at once
when it changes.  The ways Redis misbehaves, and what each does here:

* **a key is lost** (expiry, eviction, restart without persistence): a
  reader makes a new random token, so a lost key turns hits into misses;
* **Redis goes back in time** (restart from an RDB snapshot or a short
  AOF, failover to a replica that missed the latest writes): the old
  tokens come back, but the server is another process.  Every connection
  a client opens first compares the server's ``run_id`` with the one Redis
  holds under the ``instance`` key, and replaces the epoch when they
  differ, before the connection serves anything
  (:meth:`.core.Generations._connected`).  Through Redis Sentinel a promoted
  replica is reached by new connections; on a Redis Cluster the client
  closes its connections to a node that comes to hold Mass's slot, so
  those it opens there are checked (:mod:`swift_mass.redis_client`);
* **Redis refuses writes but answers reads** (MISCONF, ``maxmemory`` with
  ``noeviction``, a READONLY replica, ``min-replicas-to-write``): a read is
  a write too (it renews ``alive``, below), so readers fail with the
  writers and validate hits against Swift meanwhile;
* **Redis hangs** or **goes away for a while**: writers wait at most
  ``bump_wait`` seconds, then answer the client and become *dirty*: they
  replace the epoch as soon as Redis answers again (retrying every
  ``repair_interval``), skipping further bumps until then.  Readers that
  failed validate hits against Swift for ``retry_after`` seconds.  And
  every script compares Redis's clock with the time of the last script
  that ran (``alive``, renewed by every worker's heartbeat every
  ``gap / 4`` seconds): after a gap over ``gap`` seconds, in which no
  write could be recorded, the epoch is replaced first.
* **a Sentinel failover or split brain**: a proxy pool that found the old
  master may read it for up to a check period after a writer's bump
  failed there (no master a majority names, the master going away).  So,
  through Sentinel, a write whose bump failed or was skipped is answered
  only once the epoch is replaced or ``SENTINEL_HOLD`` seconds passed
  since the writer's first failed bump of the outage, whichever is first;
  by then every such pool has asked the sentinels again
  (:mod:`swift_mass.redis_client`).  A tenant outside the set the writer
  registered is not held: no proxy reading that registration trusts it.

Whether a fill may read one replica rests on the *fence*: the highest
write recorded for the object, sealed by a proxy's read of the newest
replica in an era (an epoch, and the version of the bumped set the tenant
entered in) and trusted only in that era (:meth:`.reader.GenerationReader.
read`, ``lua/seal.lua``; the argument: docs/cache.md, "Why no fill is
older than an acknowledged write").

What is left: a storage node cut off from Redis while the proxies still
reach it, and a refusal shorter than ``gap`` that a reader sat out idle
and ended less than ``repair_interval`` before the reader's next read.

A cache that trusts generations also needs every object server to bump
them: each ``mass_queue`` process registers the ring devices it serves
(hash ``bumping:<ip>:<port>/<device>``, a field per process, renewed by
the heartbeat), and a proxy trusts generations only while every device of
its object rings is registered
(:meth:`.reader.GenerationReader.uncovered`).

**Only the tenants that need it pay** (no write tax).  The object servers
bump the writes of the tenants whose method reads generations (cache,
merge) and make no Redis call for anyone else's.  The leader publishes
those tenants (:meth:`.publisher.BumpedSetPublisher.publish`: hash
``bumps``, tenant -> the version of the set it entered in, and
``bumps:version``); every object server process reloads the set when its
version changes, before its heartbeat, and registers the version it
applies.  The barrier, both
ways:

* a tenant's generations are trusted only once every live process of every
  device has registered a version at least the one the tenant entered in
  (:meth:`.reader.GenerationReader.read` compares it with the lowest
  registered): from then on every write of the tenant is bumped, and one
  that finished before was on disk before any proxy trusted a generation
  of it.  A body is stored under the tenant's entry version too, so
  nothing cached in an earlier membership is served in a later one;
* a tenant leaves the set in Redis first, and
  :meth:`.reader.GenerationReader.read` reads its membership in the same
  script as the generation: once it is out no proxy trusts its
  generations, whatever table a proxy holds, and only then do object
  servers stop bumping its writes;
* a process whose heartbeat failed, or whose registration may have lapsed
  (no heartbeat got through for nearly as long as a registration lives),
  bumps every write again, at once;
* a registration Redis dropped while its process still relied on it (a
  step forward of Redis's clock, an eviction) is found at the process's
  next heartbeat, which replaces the epoch: writes in between may have
  passed unbumped.

Each deadline a process keeps for itself (a registration it trusts, a
Redis it skips, coverage it looked up) is on its monotonic clock, which no
step of the wall clock moves; what is compared with Redis's ``TIME``
(``alive``, a registration's expiry) is compared in Redis's scripts.

Redis errors never propagate; each outage is logged once.

By role: :mod:`.core` is what every role shares (one Redis, its clients,
keys and breaker, the defence against a Redis gone back in time, the
heartbeat), :mod:`.reader` a proxy's cache, :mod:`.writer` an object
server's ``mass_queue`` and :mod:`.publisher` the leader's bumped set.
Their Lua scripts are the files of ``lua/``.
"""

import hashlib


def object_key(account, container, obj):
    """A fixed-length key for an object, the same in every proxy and
    object server (WSGI strings of its path): object names are up to 1 KiB
    of arbitrary bytes."""
    name = '/'.join((account, container, obj)).encode('latin-1')
    return hashlib.sha256(name).hexdigest()
