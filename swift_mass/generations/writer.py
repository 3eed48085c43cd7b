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
"""An object server's side of the generations
(:mod:`swift_mass.generations`): each write's bump, and the registrations
and bumped set that spare the writes of the tenants no proxy caches (no
write tax)."""
import os

from swift.common.utils import Timestamp

from swift_mass import metrics
from swift_mass.generations.core import Generations, decoded, new_token
from swift_mass.lua import read_script
from swift_mass.redis_client import SENTINEL_HOLD, parse_url

DEFAULT_REPAIR_INTERVAL = 0.02


class GenerationWriter(Generations):
    """Generations as an object server's ``mass_queue`` bumps them.

    :param repair_interval: seconds between a bump's attempts within
        ``bump_wait``, and between a dirty writer's attempts to replace
        the epoch.  The other parameters are
        :class:`~swift_mass.generations.core.Generations`'.
    """

    _BUMP = read_script(__package__, 'bump')

    def __init__(self, url, logger,
                 repair_interval=DEFAULT_REPAIR_INTERVAL, **kwargs):
        super(GenerationWriter, self).__init__(url, logger, **kwargs)
        self.repair_interval = float(repair_interval)
        # Through Sentinel, a bump that failed (no master a majority
        # names, a master going away) may leave a proxy reading the old
        # master for up to a check period: a write not recorded is
        # answered only once the epoch is replaced or that time passed.
        self.unrecorded_hold = SENTINEL_HOLD \
            if parse_url(url).kind == 'sentinel' else 0.0
        self._bump = self.bump_client.register_script(self._BUMP)
        # a bump failed: the epoch must change before the next bump
        self.dirty = False
        # bumps skipped while dirty, so a repair knows whether one was
        # skipped while its new epoch was on its way
        self.skipped = 0
        self._repairing = False
        # when this writer last lost Redis (its clock), None while it
        # reaches it: a hold is counted from there, once per outage
        self.outage_began = None
        self.names = tuple
        # an object server's bumped set: None until loaded
        self.bumped = None
        self.bumped_version = None
        # until when the registration of the process whose heartbeat got
        # through surely lives (its clock), and that process: a worker
        # forked after it is not registered, yet inherits both
        self.registered_until = 0.0
        self._registered_pid = None
        # until when the registration of the last heartbeat that got
        # through surely lives in Redis, even after a heartbeat failed
        # (registered_until no longer trusts it then)
        self._registration_lives_until = 0.0
        # what that heartbeat registered
        self._registered_names = ()

    # -- the bumped set ------------------------------------------------

    def bumps_writes_of(self, tenant):
        """Whether this object server bumps the writes of ``tenant``: the
        tenants of the set it applies, or everyone's until it has loaded
        one, and again once its heartbeat failed, its registration may
        have lapsed or, in a worker forked since, was never made."""
        return not self._relies_on_registration() or tenant in self.bumped

    def holds_unrecorded(self, tenant):
        """Whether a write of ``tenant`` whose bump Redis did not record
        must wait out a proxy pool still reading the old master
        (:meth:`_hold_unrecorded`).  Not for a tenant outside the set this
        process registered, while that registration surely lives: every
        proxy that reads the master holding it sees this process apply a
        set without the tenant, so trusts none of its generations there."""
        return self.bumped is None or tenant in self.bumped or \
            self.clock() >= self._registration_lives_until or \
            self._registered_pid != os.getpid()

    def _relies_on_registration(self):
        # whether writes of tenants outside the bumped set pass unbumped
        return self.bumped is not None and \
            self.clock() < self.registered_until and \
            self._registered_pid == os.getpid()

    def load_bumped(self):
        """Reload the bumped set if its version changed; whether this
        process knows the current one."""
        version = decoded(self.heartbeat_client.get(self.bumps_version_key))
        version = int(version or 0)
        if version == self.bumped_version:
            return True
        # MULTI: the set and the version it belongs to, read together
        pipe = self.heartbeat_client.pipeline(transaction=True)
        pipe.get(self.bumps_version_key)
        pipe.hkeys(self.bumps_key)
        version, tenants = pipe.execute()
        self.bumped = frozenset(decoded(t) for t in tenants)
        self.bumped_version = int(decoded(version) or 0)
        return True

    # -- bumps ---------------------------------------------------------

    def bump(self, keys, timestamp=None, hold=True, data=True):
        """Give each object a new generation, recording the write's
        ``timestamp`` (its X-Timestamp) if given; whether Redis took it
        within ``bump_wait``.  A failure makes this worker dirty: it skips
        bumps, and replaces the epoch as soon as Redis answers.  A write
        not recorded (failed or skipped) returns, if ``hold``
        (:meth:`holds_unrecorded`), once the epoch is replaced or
        ``unrecorded_hold`` seconds passed since the outage began,
        whichever is first (see :meth:`_hold_unrecorded`).  ``data``: the
        write replaced the object's data (a PUT or DELETE), not only its
        metadata (a POST)."""
        if self.dirty:
            self.skipped += 1
            metrics.increment(
                self.logger, 'generations.bump_skipped', 'generations',
                {'event': 'bump_skipped'})
            if self.outage_began is None:
                self.outage_began = self.clock()
            if hold:
                self._hold_unrecorded()
            return False
        written = ''
        if timestamp:
            try:
                written = Timestamp(timestamp).internal
            except ValueError:
                pass
        keys = list(keys)
        began = self.clock()
        deadline = began + self.bump_wait
        error = None
        while True:
            try:
                self._bump(
                    keys=[self.epoch_key, self.alive_key] +
                    [self._key(key) for key in keys],
                    args=self._epoch_args() + [
                        self.ttl, written, '1' if data else '0'] +
                    [new_token() for _key in keys])
                self.breaker.succeeded()
                self.outage_began = None
                return True
            except Exception as err:
                error = err
            if self.clock() + self.repair_interval >= deadline:
                break
            self.sleep(self.repair_interval)
        self.dirty = True
        metrics.increment(
            self.logger, 'generations.bump_failed', 'generations',
            {'event': 'bump_failed'})
        self.failed(error)
        if not self._repairing:
            self._repairing = True
            self.spawn(self._repair)
        if self.outage_began is None:
            self.outage_began = began
        if hold:
            self._hold_unrecorded()
        return False

    def _hold_unrecorded(self):
        """Wait until the epoch is replaced (every body cached before is
        then invalid, on whatever master the proxies read) or
        ``unrecorded_hold`` seconds passed since this writer lost Redis
        (``outage_began``, the first failed attempt of the outage): by
        then every proxy pool that found the old master before has asked
        the sentinels again (:mod:`swift_mass.redis_client`, "Split brain
        on Sentinel"), so later writes of the outage do not wait at all:
        a pool still reading a master the sentinels name is one this
        writer is cut off from, which no hold covers (docs/redis.md)."""
        deadline = self.outage_began + self.unrecorded_hold
        while self.dirty and self.clock() < deadline:
            self.sleep(self.repair_interval)

    def _repair(self):
        """Replace the epoch once Redis answers again."""
        try:
            while self.dirty:
                # A write whose bump is skipped after this point may be
                # acknowledged after Redis took the new epoch: a reader
                # could then cache the old body under it.  Such a skip
                # takes another epoch.
                skipped = self.skipped
                try:
                    self.bump_client.set(self.epoch_key, new_token())
                except Exception:
                    self.sleep(self.repair_interval)
                    continue
                if self.skipped != skipped:
                    continue
                self.dirty = False
                self.outage_began = None
                self.breaker.succeeded()
                metrics.increment(
                    self.logger, 'generations.epoch', 'generations',
                    {'event': 'epoch'})
                self.logger.info('mass generations: new epoch after '
                                 'writes Redis did not record')
        finally:
            self._repairing = False

    # -- heartbeat -----------------------------------------------------

    def start(self, names=None):
        """Run the heartbeat in this process (once; call it after the
        server forked its workers), registering what ``names()`` answers
        at each beat."""
        if names is not None:
            self.names = names
        super(GenerationWriter, self).start()

    def heartbeat(self):
        """Renew ``alive`` and, with the bumped set reloaded first, this
        process's registrations, replacing the epoch if Redis dropped one
        this process relied on; whether Redis answered."""
        began = self.clock()
        # Redis may have dropped a registration before this process's
        # deadline (its clock stepped forward, the key evicted); only
        # Redis's TIME can tell whether those it relied on lived.
        relied = list(self._registered_names) \
            if self._relies_on_registration() else []
        try:
            # in the try: a ring replaced in place must not end the
            # heartbeat for good
            names = sorted(self.names())
            if names:
                self.load_bumped()
            lapsed = self._renew(names, relied, self.bumped_version or 0)
        except Exception as err:
            # Redis may drop the registration before this process could
            # tell: trust it no longer.
            self.registered_until = 0.0
            self._heartbeat_failed(err)
            return False
        self._heartbeat_succeeded()
        if lapsed:
            metrics.increment(
                self.logger, 'generations.registration_lapsed', 'generations',
                {'event': 'registration_lapsed'})
            self.logger.warning(
                'mass generations: Redis dropped a registration of this '
                'process before it expected (a step of Redis\'s clock, an '
                'eviction), when writes may have passed unbumped: new '
                'epoch, every cached body is invalid')
        self._registered_names = names
        if names:
            # a second short of Redis's expiry, measured from before the
            # call: the registration surely lives until then
            self.registered_until = began + self.registration_ms / 1000.0 \
                - 1.0
            self._registration_lives_until = self.registered_until
            self._registered_pid = os.getpid()
        return True
