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
"""The store that passes a failed store over to its fallback through a
circuit breaker (:class:`swift_mass.breaker.Breaker`)."""

import time

from swift_mass.breaker import Breaker, describe
from swift_mass.control.stores.base import Store


class ResilientStore(Store):
    """A circuit breaker: ``primary`` while it answers, else ``fallback``.

    The first failure of the primary (any exception: a refused connection,
    a timeout, a Redis or memcache error) logs one warning, and for
    ``retry_after`` seconds every call goes straight to the fallback, so an
    outage costs one timeout, not one per request.  Then one call tries the
    primary again (the others keep using the fallback meanwhile); if it
    answers, one info line says it recovered.  The fallback may itself be a
    ResilientStore (Redis -> memcache -> local).  Should the fallback fail
    too, the call returns an empty answer (no counts, no table, no lease)
    and one error is logged: callers never see an exception.
    """
    name = 'resilient'

    def __init__(self, primary, fallback, logger, retry_after=30.0,
                 clock=time.time):
        self.primary = primary
        self.fallback = fallback
        self.logger = logger
        self.breaker = Breaker(retry_after, clock, on_open=self._opened,
                               on_close=self._closed)
        self._fallback_failing = False

    @property
    def retry_after(self):
        return self.breaker.retry_after

    def in_use(self):
        if self.breaker.error is None:
            return self.primary.name
        return self.fallback.in_use()

    def holds_pins(self):
        # a fallback knows none of the pins the primary holds
        return self.breaker.error is None and self.primary.holds_pins()

    def _opened(self, error):
        self.logger.warning(
            'Mass store %s unavailable (%s); using %s, retrying every %gs',
            self.primary.name, error, self.fallback.in_use(),
            self.breaker.retry_after)

    def _closed(self):
        self.logger.info('Mass store %s recovered', self.primary.name)

    def _call(self, method, args, empty, rest=None):
        """``method(*args)`` of the primary if the breaker allows, else
        (or when it fails) of the fallback; ``empty`` if both fail.
        ``rest(error, args)``: the arguments the fallback gets when the
        primary failed with ``error`` (by default the same)."""
        if self.breaker.allows():
            try:
                result = getattr(self.primary, method)(*args)
            except Exception as err:
                self.breaker.failed(describe(err))
                if rest is not None:
                    args = rest(err, args)
            else:
                self.breaker.succeeded()
                return result
        try:
            result = getattr(self.fallback, method)(*args)
        except Exception as err:
            if not self._fallback_failing:
                self._fallback_failing = True
                self.logger.error('Mass store %s failed too (%s); Mass runs '
                                  'without shared state',
                                  self.fallback.name, describe(err))
            return empty
        self._fallback_failing = False
        return result

    def add_counts_many(self, items, ttl):
        # what a primary that failed part way may not have taken goes to
        # the fallback; what it took stays there
        return self._call(
            'add_counts_many', (list(items), ttl), None,
            rest=lambda err, args: (getattr(err, 'unwritten', args[0]),
                                    args[1]))

    def read_counts(self, since_bucket, fields=None):
        return self._call('read_counts', (since_bucket, fields), {})

    def get_table(self):
        return self._call('get_table', (), (0, {}))

    def put_table(self, table):
        """The new version, or 0 if no store could take the table."""
        return self._call('put_table', (table,), 0)

    def table_version(self):
        return self._call('table_version', (), 0)

    def table_changes(self, since):
        """None (no change) if no store answers: a worker keeps the
        table it has."""
        return self._call('table_changes', (since,), None)

    def update_table(self, since, table, changed):
        return self._call('update_table', (since, table, changed), None)

    def acquire_lease(self, owner, ttl_ms):
        return self._call('acquire_lease', (owner, ttl_ms), False)

    def release_lease(self, owner):
        return self._call('release_lease', (owner,), None)

    def lease_holder(self):
        return self._call('lease_holder', (), None)

    def set_pin(self, tenant, pin):
        return self._call('set_pin', (tenant, pin), None)

    def delete_pin(self, tenant):
        return self._call('delete_pin', (tenant,), None)

    def get_pins(self):
        return self._call('get_pins', (), {})

    def mark_forgotten(self, marks, ttl):
        return self._call('mark_forgotten', (marks, ttl), None)

    def forgotten(self):
        return self._call('forgotten', (), {})

    def health(self):
        """The health of the store in use; while the primary is out,
        ``ok`` is False and ``error`` says why (for each store passed over,
        outermost first)."""
        breaker = self.breaker
        if breaker.error is None:
            health = self.primary.health()
            if health['ok']:
                return dict(health, fallback=self.fallback.in_use())
            breaker.failed(health['error'])
        health = dict(self.fallback.health())
        reason = '%s: %s' % (self.primary.name, breaker.error)
        if health.get('error'):
            reason += '; ' + health['error']
        health.update(ok=False, error=reason, primary=self.primary.name,
                      retry_in=max(0.0, breaker.retry_at - breaker.clock()))
        return health
