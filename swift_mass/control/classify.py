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
"""Workload classes and the rule that assigns one to a tenant.

Plain Python, no Swift: the controller feeds it a tenant's counts over the
monitoring window and the class the tenant had before.

The read share is computed over operations (GET and HEAD against PUT, POST,
DELETE and COPY), not bytes: what a class buys a tenant (a proxy cache,
batched admission, request collapsing) is paid per request, and by bytes a
single large backup upload would outweigh thousands of small reads.
"""
import collections
import math

# the classes are the wire contract's: the proxies tag requests with them
from swift_mass.tags import CLASSES, MIXED, READ, WRITE  # noqa: F401

UNKNOWN = 'unknown'

Thresholds = collections.namedtuple('Thresholds', [
    'read_share',   # a read share at or above this is read-dominated
    'write_share',  # a read share at or below this is write-dominated
    'min_requests',  # fewer requests in the window: no decision
    'hysteresis',   # how far back over a threshold a class must go to leave
])

DEFAULT_THRESHOLDS = Thresholds(read_share=0.8, write_share=0.2,
                                min_requests=50, hysteresis=0.05)

#: standard errors of the window's read share by which it must lie past a
#: class's threshold before a tenant leaves the class, when that is more
#: than the hysteresis: a window of a hundred-odd requests measures a share
#: of 0.2 only to about 0.035, and a tenant whose workload sat on the
#: write threshold changed class six times in four minutes
#: (docs/benchmarks/adaptation-internal-diagnostic-2026-12-06)
EXIT_STANDARD_ERRORS = 2.0


def check_thresholds(thresholds):
    """Raise ValueError naming the first inconsistent field."""
    t = thresholds
    if not 0.0 < t.write_share < t.read_share < 1.0:
        raise ValueError('write_share must be below read_share, both '
                         'strictly between 0 and 1')
    if t.min_requests < 1:
        raise ValueError('min_requests must be at least 1')
    if not 0.0 <= t.hysteresis < (t.read_share - t.write_share) / 2:
        raise ValueError('hysteresis must be >= 0 and less than half the '
                         'gap between write_share and read_share')


def read_share(reads, writes):
    total = reads + writes
    return reads / total if total else None


def classify(reads, writes, previous=UNKNOWN,
             thresholds=DEFAULT_THRESHOLDS):
    """The class for a tenant that made `reads` and `writes` requests in the
    window and was `previous` before.

    Below ``min_requests`` the previous class stands.  A tenant enters READ
    at ``read_share`` and leaves it only once its share is below
    ``read_share`` by the :func:`exit_margin`; WRITE likewise on the other
    side; so a tenant hovering on a threshold does not flap.
    """
    t = thresholds
    requests = reads + writes
    if requests < t.min_requests:
        return previous
    share = reads / requests
    read_bar = t.read_share - (exit_margin(t.read_share, requests, t)
                               if previous == READ else 0.0)
    write_bar = t.write_share + (exit_margin(t.write_share, requests, t)
                                 if previous == WRITE else 0.0)
    if share >= read_bar:
        return READ
    if share <= write_bar:
        return WRITE
    return MIXED


def exit_margin(threshold, requests, thresholds=DEFAULT_THRESHOLDS):
    """How far past ``threshold`` a share measured over ``requests``
    requests must lie for a tenant to leave the class the threshold
    bounds: the hysteresis, or ``EXIT_STANDARD_ERRORS`` standard errors
    of such a share when that is more, never more than half the gap
    between the thresholds (so a jump across the whole range always
    leaves)."""
    spread = EXIT_STANDARD_ERRORS * math.sqrt(
        threshold * (1.0 - threshold) / requests)
    return min(max(thresholds.hysteresis, spread),
               (thresholds.read_share - thresholds.write_share) / 2.0)
