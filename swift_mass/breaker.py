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
"""The circuit breaker in front of each of Mass's backends, wherever one
is called: the store chain (:mod:`swift_mass.control.stores`: the proxies
and the ``swift-mass`` command) and the generations' Redis
(:mod:`swift_mass.generations`: the proxies and the object servers), and
how each describes the error that opened it."""

import time


def describe(err):
    """``err`` as a breaker keeps it (:meth:`Breaker.failed`) and as a
    log line or a health report shows it: its type and its message."""
    return '%s: %s' % (type(err).__name__, err)


class Breaker(object):
    """A circuit breaker for one backend.

    Closed while the backend answers.  The first failure opens it for
    ``retry_after`` seconds, during which :meth:`allows` says no; then it
    lets one caller probe (the others are still refused for another
    ``retry_after``), and a success closes it.  ``on_open(error)`` and
    ``on_close()`` are called once per transition, for the owner's log
    line.  Hand-written: pybreaker opens after a count of failures and
    raises its own exception, where a Mass backend opens on the first one,
    its callers pick their own fallback, and tests move its clock.
    """

    def __init__(self, retry_after, clock=time.time, on_open=None,
                 on_close=None):
        self.retry_after = float(retry_after)
        self.clock = clock
        self.on_open = on_open
        self.on_close = on_close
        self.error = None  # why it is open; None: closed
        self.retry_at = 0.0  # when a probe may go to the backend

    def allows(self):
        """Whether a call may go to the backend now."""
        if self.error is None:
            return True
        now = self.clock()
        if now < self.retry_at:
            return False
        # Only this call probes; concurrent ones keep away from the
        # backend until it has answered.
        self.retry_at = now + self.retry_after
        return True

    def failed(self, error):
        """A call failed with ``error`` (a description): open, or stay
        open for another ``retry_after``."""
        opened = self.error is None
        self.error = error
        self.retry_at = self.clock() + self.retry_after
        if opened and self.on_open is not None:
            self.on_open(error)

    def succeeded(self):
        """A call was answered: close."""
        if self.error is not None:
            self.error = None
            self.retry_at = 0.0
            if self.on_close is not None:
                self.on_close()
