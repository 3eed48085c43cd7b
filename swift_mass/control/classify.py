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
    at ``read_share`` and leaves it only below ``read_share - hysteresis``;
    WRITE likewise on the other side; so a tenant hovering on a threshold
    does not flap.
    """
    t = thresholds
    if reads + writes < t.min_requests:
        return previous
    share = reads / (reads + writes)
    read_bar = t.read_share - (t.hysteresis if previous == READ else 0.0)
    write_bar = t.write_share + (t.hysteresis if previous == WRITE else 0.0)
    if share >= read_bar:
        return READ
    if share <= write_bar:
        return WRITE
    return MIXED
