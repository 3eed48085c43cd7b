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
"""The shared store: where Mass proxies meet.

Every proxy worker, on every proxy machine, keeps four kinds of state here:

* window counters: per tenant and time bucket, integer fields that only
  ever grow by addition (see :mod:`swift_mass.control.monitor`), so the
  deltas of
  any number of workers add up to the cluster's figures.  A bucket expires
  ``ttl`` seconds after it was written.  A worker hands over all of its
  counters of an interval in one call (:meth:`Store.add_counts_many`);
* the policy table: an entry ``{tenant: policy}`` per tenant, with a
  *state*, ``(id, version)``.  The leader writes only the entries that
  changed (:meth:`Store.update_table`), each write a new version; workers
  ask each interval for what changed since the state they hold
  (:meth:`Store.table_changes`, cheap when nothing did) and get either the
  entries changed since (a delta) or, when the store cannot tell (its
  change log no longer reaches that far back, or the state is another
  store's), the whole table.  The id names one lineage of versions: a
  store that lost its table (a restarted Redis or memcached, a worker-local
  fallback) starts another one, from version 1, so versions of different
  ids are never compared;
* pins: an operator's hand-set policy per tenant, which the controller
  never overrides;
* the leader lease: the one controller that decides at a time.

:class:`~swift_mass.control.stores.base.Store` says what every store
offers.  Redis (:mod:`~swift_mass.control.stores.redis_store`) is the store
of choice, as one Redis, the master of a Redis Sentinel service or a Redis
Cluster (``redis_url``, :mod:`swift_mass.redis_client`).  On a Cluster all
of Mass's keys, the cache's with the store's, are in one hash slot, so all
of Mass's state is on one master of the Cluster (and its replicas): every
script and transaction of Mass touches several keys, which a Cluster runs
only when they are in one slot, and the never-stale scripts read the epoch
key with the per-object keys, so no split of the keys keeps each script in
one slot.  The keys and the rule are in ``RedisStore``.

Swift's own memcache (:mod:`~swift_mass.control.stores.memcache_store`)
and worker-local dicts (:mod:`~swift_mass.control.stores.local`) are the
fallbacks.  These three let their errors propagate;
:mod:`~swift_mass.control.stores.resilient`'s ``ResilientStore`` chains
them, each behind a circuit breaker (:class:`swift_mass.breaker.Breaker`;
Redis -> memcache -> local, built by :func:`store_from_conf`), and never
raises, so no request fails because a store is down.  Nothing written to
a fallback is copied back; what that means once Redis answers again:
docs/runbook.md, "Redis is down".
"""

from swift_mass.control.stores import local, memcache_store, redis_store, \
    resilient


def store_from_conf(mass_conf, logger, memcache=None):
    """The store chain that ``[filter:mass]`` asks for.

    ``mass_conf``: a :class:`swift_mass.proxy.conf.MassConf`, whose ``store``
    holds the options ``store`` (redis, memcache or local; default redis),
    ``redis_url``, ``redis_timeout_ms`` (connect and reply timeout, default
    500) and ``store_retry_after`` (seconds a failed store is passed over,
    default 30), and ``redis_prefix``, the prefix of Mass's keys in Redis,
    under which the cache keeps its own (the cache takes its Redis from
    the same options: swift_mass.proxy.methods.cache).  ``memcache`` is
    Swift's MemcacheRing if there is one.
    """
    conf = mass_conf.store
    worker = local.LocalStore()
    if conf.kind == 'local':
        return worker
    if memcache is None:
        shared = worker
        if conf.kind == 'memcache':
            logger.warning('Mass store = memcache, but there is no memcache '
                           'client; using worker-local state')
    else:
        shared = resilient.ResilientStore(
            memcache_store.MemcacheStore(memcache), worker, logger,
            conf.retry_after)
    if conf.kind == 'memcache':
        return shared
    # redis-py connects only on the first call (a Cluster's client is
    # built then), so a Redis that is down does not stop the proxy
    # starting.
    primary = redis_store.RedisStore(
        conf.redis_url, prefix=conf.redis_prefix,
        socket_timeout_ms=conf.redis_timeout_ms,
        connect_timeout_ms=conf.redis_timeout_ms)
    return resilient.ResilientStore(primary, shared, logger,
                                    conf.retry_after)
