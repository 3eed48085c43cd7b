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
"""What Mass counts about each tenant, over a sliding window.

Plain Python, no Swift.  A request becomes a handful of integer counters
(:func:`request_counts`); a worker adds them to the current time bucket of
its tenant (:class:`Window`) and periodically hands the deltas to the
shared store, where all workers' buckets add up; :func:`figures` turns a
tenant's buckets back into the numbers the classifier and the operator
read.  Everything is an integer sum, so buckets from any number of workers
merge by addition, and latency percentiles come from fixed histograms
rather than samples.

Counter names (fields of a bucket):

    ops.<OP>        requests, OP in GET HEAD PUT POST DELETE COPY OTHER
    err.<OP>        of those, answered with a 5xx
    lat_ms.<OP>     sum of their latencies, in milliseconds
    lat.<OP>.<ms>   latency histogram: requests that took <= ms (last: inf)
    bytes_in        request bytes received from clients
    bytes_out       response bytes sent to clients
    size.<bytes>    object size histogram of GET and PUT bodies
    opted_out       requests the tenant made while opted out of Mass (its
                    account's mark, or a proxy's opt_out_accounts): how
                    the leader learns of an opt-out
"""
import bisect
import collections
import math
import time

READ_OPS = ('GET', 'HEAD')
WRITE_OPS = ('PUT', 'POST', 'DELETE', 'COPY')
OPS = READ_OPS + WRITE_OPS + ('OTHER',)

LATENCY_BOUNDS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                     10000, 30000)
SIZE_BOUNDS = (4096, 65536, 1048576, 16777216, 268435456)
INF = 'inf'
#: the counter of requests an opted-out tenant made (see the docstring)
OPTED_OUT = 'opted_out'


def _bucket_label(bounds, value):
    i = bisect.bisect_left(bounds, value)
    return str(bounds[i]) if i < len(bounds) else INF


def operation(method, swift_source):
    """The operation a request counts as for its tenant, or None when it is
    the effect of a request counted already.

    Middlewares left of Mass mark their subrequests with ``swift.source``.
    Two kinds stand for the client's own request, which never reaches Mass
    itself: s3api's translation of an S3 request ('S3'), and the PUT half
    of a server-side copy ('SSC'), which is the client's COPY (or PUT with
    X-Copy-From).  The others (segment reads of slo and dlo, the GET half of
    a copy, versioning, staticweb, symlink...) are not counted again.
    """
    if swift_source is None or swift_source == 'S3':
        return method
    if swift_source == 'SSC' and method == 'PUT':
        return 'COPY'
    return None


def counted(op, status):
    """Whether a finished request (``op`` as :func:`operation` named it)
    counts towards its tenant's workload.

    401 and 403 never count: otherwise anyone could push another tenant's
    class with requests it refuses.  Other 4xx answers (400, 405, 411, 412,
    413, 416...) are decided without the tenant's data doing any work,
    except a read's 404 and 409, which the storage servers answered.  A
    write that changed nothing (404: no such container; 409) does not
    count either: a tenant could otherwise make itself write-dominated
    with writes that cost nothing, and earn the write methods' slots.
    """
    if 400 <= status < 500:
        return status in (404, 409) and op in READ_OPS
    return True


def request_counts(method, status, bytes_in, bytes_out, latency,
                   object_size=None):
    """The counter deltas of one finished request (latency in seconds)."""
    op = method if method in OPS else 'OTHER'
    ms = int(round(latency * 1000.0))
    counts = {
        'ops.' + op: 1,
        'lat_ms.' + op: ms,
        'lat.%s.%s' % (op, _bucket_label(LATENCY_BOUNDS_MS, ms)): 1,
    }
    if status >= 500:
        counts['err.' + op] = 1
    if bytes_in:
        counts['bytes_in'] = bytes_in
    if bytes_out:
        counts['bytes_out'] = bytes_out
    if object_size is not None:
        counts['size.' + _bucket_label(SIZE_BOUNDS, object_size)] = 1
    return counts


class Window(object):
    """A worker's not-yet-flushed counters, per tenant and time bucket."""

    def __init__(self, bucket_seconds=5, clock=time.time):
        self.bucket_seconds = int(bucket_seconds)
        self.clock = clock
        self._pending = collections.defaultdict(collections.Counter)

    def bucket_of(self, when):
        return int(when) // self.bucket_seconds * self.bucket_seconds

    def record(self, tenant, counts):
        self._pending[(tenant, self.bucket_of(self.clock()))].update(counts)

    def drain(self):
        """Hand over and forget the pending deltas:
        ``{(tenant, bucket): {field: delta}}`` (the dicts are Counters,
        handed over as they are: a flush of many tenants copies none)."""
        pending, self._pending = self._pending, collections.defaultdict(
            collections.Counter)
        return dict(pending)

    def __len__(self):
        return len(self._pending)


def window_buckets(now, window_seconds, bucket_seconds):
    """The first bucket of the window that ends at `now`."""
    first = int(now) - int(window_seconds) + int(bucket_seconds)
    return first // int(bucket_seconds) * int(bucket_seconds)


# opted_out last, with a default: Figures made before it still are
Figures = collections.namedtuple('Figures', [
    'reads', 'writes', 'ops', 'errors', 'bytes_in', 'bytes_out',
    'mean_latency_ms', 'p99_latency_ms', 'sizes', 'opted_out'],
    defaults=(0,))


def _percentile(histogram, fraction):
    """Upper bound (ms) of the histogram bucket holding the given fraction
    of the requests; math.inf if it lies in the last, open bucket."""
    total = sum(histogram.values())
    if not total:
        return None
    need = math.ceil(total * fraction)
    seen = 0
    for bound in LATENCY_BOUNDS_MS:
        seen += histogram.get(str(bound), 0)
        if seen >= need:
            return bound
    return math.inf


#: the prefixes of the counters the controller decides by: all that
#: :func:`decision_figures` reads, and all that the leader reads
DECISION_FIELDS = ('ops.', 'lat_ms.', OPTED_OUT)
_OP_FIELDS = tuple((op, 'ops.' + op, 'lat_ms.' + op) for op in OPS)


def decision_figures(buckets):
    """Figures of a tenant's buckets (an iterable of field dicts, of which
    only the :data:`DECISION_FIELDS` are read) with what the leader decides
    by: reads, writes, ops, mean_latency_ms and opted_out, as
    :func:`figures` gives them; the others empty.
    What the leader computes for every tenant with requests, each interval:
    a fraction of what :func:`figures` costs."""
    buckets = list(buckets)
    if len(buckets) == 1:
        total = buckets[0]
    else:
        total = {}
        for bucket in buckets:
            for field, value in bucket.items():
                total[field] = total.get(field, 0) + value
    ops, mean = {}, {}
    reads = writes = 0
    for op, ops_field, ms_field in _OP_FIELDS:
        n = total.get(ops_field)
        if n:
            ops[op] = n
            mean[op] = total.get(ms_field, 0) / float(n)
            if op in READ_OPS:
                reads += n
            elif op in WRITE_OPS:
                writes += n
    # reads, writes, ops, errors, bytes_in, bytes_out, mean_latency_ms,
    # p99_latency_ms, sizes, opted_out (positional: it is made for every
    # tenant)
    return Figures(reads, writes, ops, {}, 0, 0, mean, {}, {},
                   total.get(OPTED_OUT, 0))


def figures(buckets):
    """Sum a tenant's buckets (an iterable of field dicts) into Figures."""
    total = collections.Counter()
    for bucket in buckets:
        total.update(bucket)
    ops = {op: total['ops.' + op] for op in OPS if total['ops.' + op]}
    mean, p99 = {}, {}
    for op, n in ops.items():
        mean[op] = total['lat_ms.' + op] / float(n)
        prefix = 'lat.%s.' % op
        p99[op] = _percentile(
            {k[len(prefix):]: v for k, v in total.items()
             if k.startswith(prefix)}, 0.99)
    return Figures(
        reads=sum(ops.get(op, 0) for op in READ_OPS),
        writes=sum(ops.get(op, 0) for op in WRITE_OPS),
        ops=ops,
        errors={op: total['err.' + op] for op in OPS if total['err.' + op]},
        bytes_in=total['bytes_in'],
        bytes_out=total['bytes_out'],
        mean_latency_ms=mean,
        p99_latency_ms=p99,
        sizes={k[5:]: v for k, v in total.items() if k.startswith('size.')},
        opted_out=total[OPTED_OUT],
    )
