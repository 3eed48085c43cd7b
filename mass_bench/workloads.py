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
"""Benchmark workloads: what one tenant's clients do, and the presets.

A workload is defined as COSBench and ssbench define one: an operation mix
(GET, HEAD, PUT, DELETE shares), an object size (fixed or a range drawn
uniformly), the number of objects a run starts with, the number of
concurrent clients, and how long it runs (or how many operations) after a
warm-up.  Which object a read, delete or overwrite picks follows the
workload's popularity: uniform (each client over its own slice of the set)
or Zipf (every client over the whole set, rank k drawn with probability
proportional to 1/k^S, so the hot objects are the same for all clients, as
a cache sees them).  PUTs write new objects, or with ``overwrite`` rewrite
objects of the set.  Its clients speak the Swift API or, with ``api=s3``,
S3 through Swift's s3api.  Plain Python, no I/O: ``mass_bench.bench``
drives the cluster.

The presets are the workloads of the papers behind Mass:

* the slides' synthetic workloads A (100 % read, 512 KB), B (50/50, 64 KB)
  and C (100 % write, 8 KB);
* the MOS paper's Table 1 (web hosting, online game, video sharing,
  enterprise backup; G/P/D percentages and size ranges as published; the
  video and backup sizes of 1-128 MB are scaled down by ``--scale`` if a
  machine cannot hold them);
* the slides' application profiles (database OLTP 70/30 8 KB, web file
  server 95/5 8-64 KB, decision support 100/0 1 MB, online game hosting
  5/95 64 KB).
"""
import bisect
import dataclasses
import math
import random

from swift_mass.control import classify

OPERATIONS = ('GET', 'HEAD', 'PUT', 'DELETE')
KB = 1024
MB = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    mix: tuple            # ((operation, share), ...), shares sum to 1
    size_min: int         # bytes of each object PUT
    size_max: int
    objects: int = 40     # objects in the container before the run
    concurrency: int = 2  # clients, each with its own connection
    seconds: float = 20.0  # measured time, after the warm-up
    operations: int = 0   # if > 0: stop after this many instead
    warmup: float = 3.0   # seconds run but not measured
    description: str = ''
    # X-Storage-Policy of its containers ('': Mass's routing, or the
    # default policy, decides)
    policy: str = ''
    # which objects reads, deletes and overwrites pick: 'uniform' or
    # 'zipf:S' (see popularity_exponent)
    popularity: str = 'uniform'
    # PUTs rewrite objects of the set (picked by popularity) instead of
    # creating new ones
    overwrite: bool = False
    # the API its clients speak: 'swift' (a token, /v1/ACCOUNT/...) or
    # 's3' (s3api: /BUCKET/KEY, signed with AWS SigV4)
    api: str = 'swift'

    def share(self, *operations):
        return sum(s for op, s in self.mix if op in operations)

    @property
    def intended_class(self):
        """The class Mass should find for this workload, by the default
        thresholds: what an operator pins it to in the static mode."""
        reads = self.share('GET', 'HEAD')
        writes = self.share('PUT', 'DELETE')
        return classify.classify(reads * 1000, writes * 1000)

    @property
    def zipf(self):
        """Zipf's exponent S, or None for uniform popularity."""
        return popularity_exponent(self.popularity)

    def with_options(self, **options):
        return check(dataclasses.replace(self, **options))


APIS = ('swift', 's3')
POPULARITY_FORMS = 'uniform, or zipf:S with a number S > 0 (e.g. zipf:0.99)'


def popularity_exponent(text):
    """None for 'uniform', S for 'zipf:S'; ValueError for anything else."""
    kind, sep, exponent = text.strip().lower().partition(':')
    if kind == 'uniform' and not sep:
        return None
    try:
        value = float(exponent) if kind == 'zipf' and sep else None
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or value <= 0:
        raise ValueError('popularity: %r is not valid; allowed: %s' % (
            text, POPULARITY_FORMS))
    return value


def check(workload):
    """Raise ValueError naming the first field that makes no sense."""
    w = workload
    ops = [op for op, _ in w.mix]
    if not w.mix or set(ops) - set(OPERATIONS) or len(set(ops)) != len(ops):
        raise ValueError('mix: operations must be distinct ones of %s'
                         % ', '.join(OPERATIONS))
    if any(s < 0 for _, s in w.mix) or abs(sum(s for _, s in w.mix) - 1) \
            > 1e-6:
        raise ValueError('mix: shares must be >= 0 and add up to 1')
    if not 0 < w.size_min <= w.size_max:
        raise ValueError('size: must be > 0, and min <= max')
    if w.objects < 1 and w.share('GET', 'HEAD', 'DELETE') > 0:
        raise ValueError('objects: reads and deletes need at least 1')
    if w.objects < 1 and w.overwrite and w.share('PUT') > 0:
        raise ValueError('objects: overwrites need at least 1')
    popularity_exponent(w.popularity)
    if w.api not in APIS:
        raise ValueError('api: %r is not valid; allowed: %s' % (
            w.api, ', '.join(APIS)))
    if w.concurrency < 1:
        raise ValueError('concurrency: at least 1')
    if w.seconds <= 0 and w.operations <= 0:
        raise ValueError('seconds or operations: one must be > 0')
    if w.warmup < 0:
        raise ValueError('warmup: must be >= 0')
    return w


def _preset(name, get=0.0, head=0.0, put=0.0, delete=0.0, size=(1, 1),
            description=''):
    mix = tuple((op, share) for op, share in (
        ('GET', get), ('HEAD', head), ('PUT', put), ('DELETE', delete))
        if share)
    return check(Workload(name, mix, size[0], size[1],
                          description=description))


PRESETS = {w.name: w for w in (
    _preset('A', get=1.0, size=(512 * KB, 512 * KB),
            description='slides: 100% read, 512 KB (cache)'),
    _preset('B', get=0.5, put=0.5, size=(64 * KB, 64 * KB),
            description='slides: 50/50, 64 KB (merge)'),
    _preset('C', put=1.0, size=(8 * KB, 8 * KB),
            description='slides: 100% write, 8 KB (batch)'),
    _preset('web-hosting', get=0.9, put=0.05, delete=0.05,
            size=(1 * KB, 128 * KB),
            description='MOS Table 1 workload A: G90 P5 D5, 1-128 KB'),
    _preset('online-game', get=0.05, put=0.9, delete=0.05,
            size=(1 * KB, 128 * KB),
            description='MOS Table 1 workload B: G5 P90 D5, 1-128 KB'),
    _preset('video-sharing', get=0.9, put=0.05, delete=0.05,
            size=(1 * MB, 128 * MB),
            description='MOS Table 1 workload C: G90 P5 D5, 1-128 MB'),
    _preset('enterprise-backup', get=0.05, put=0.9, delete=0.05,
            size=(1 * MB, 128 * MB),
            description='MOS Table 1 workload D: G5 P90 D5, 1-128 MB'),
    _preset('oltp', get=0.7, put=0.3, size=(8 * KB, 8 * KB),
            description='slides: database OLTP, 70/30, 8 KB'),
    _preset('web-file-server', get=0.95, put=0.05, size=(8 * KB, 64 * KB),
            description='slides: web file server, 95/5, 8-64 KB'),
    _preset('decision-support', get=1.0, size=(1 * MB, 1 * MB),
            description='slides: decision support, 100/0, 1 MB'),
    _preset('game-hosting', get=0.05, put=0.95, size=(64 * KB, 64 * KB),
            description='slides: online game hosting, 5/95, 64 KB'),
)}


def _flag(key, value):
    if value.strip() not in ('0', '1'):
        raise ValueError('%s: %r is not valid; allowed: 0 or 1' % (key,
                                                                   value))
    return value.strip() == '1'


def _text(_key, value):
    return value


def _number(kind):
    def convert(key, value):
        try:
            return kind(value)
        except ValueError:
            raise ValueError('%s: %r is not a number' % (key, value))
    return convert


_FIELDS = {'objects': _number(int), 'concurrency': _number(int),
           'seconds': _number(float), 'operations': _number(int),
           'warmup': _number(float), 'policy': _text, 'popularity': _text,
           'overwrite': _flag, 'api': _text}


def parse_size(text):
    """'512k', '1M', '8192' -> bytes (K and M are binary)."""
    text = text.strip().lower()
    factor = 1
    if text.endswith(('k', 'kb', 'kib')):
        factor, text = KB, text.rstrip('bik')
    elif text.endswith(('m', 'mb', 'mib')):
        factor, text = MB, text.rstrip('bim')
    try:
        value = float(text) * factor
    except ValueError:
        raise ValueError('size: %r is not a size such as 8192, 64k or 1M'
                         % text)
    return int(value)


def parse(spec, name=None):
    """A workload from ``PRESET[,field=value...]`` or from fields alone:
    ``get=0.7,put=0.3,size=8k,objects=100,concurrency=4,seconds=30``.
    ``size`` is one size or ``MIN-MAX``; mix fields are get, head, put,
    delete (shares; when any is given, all unnamed ones are 0);
    ``popularity`` is uniform or zipf:S, ``overwrite`` 0 or 1."""
    parts = [p.strip() for p in spec.split(',') if p.strip()]
    base = None
    if parts and '=' not in parts[0]:
        if parts[0] not in PRESETS:
            raise ValueError('unknown workload %r; presets: %s' % (
                parts[0], ', '.join(sorted(PRESETS))))
        base = PRESETS[parts.pop(0)]
    options, mix = {}, {}
    for part in parts:
        key, sep, value = part.partition('=')
        key = key.strip().lower()
        if not sep:
            raise ValueError('%r: expected field=value' % part)
        if key.upper() in OPERATIONS:
            mix[key.upper()] = float(value)
        elif key == 'size':
            low, _, high = value.partition('-')
            options['size_min'] = parse_size(low)
            options['size_max'] = parse_size(high or low)
        elif key in _FIELDS:
            options[key] = _FIELDS[key](key, value)
        else:
            raise ValueError('unknown field %r; fields: get, head, put, '
                             'delete, size, %s' % (key, ', '.join(_FIELDS)))
    if mix:
        options['mix'] = tuple((op, mix[op]) for op in OPERATIONS
                               if mix.get(op))
    if base is None:
        if 'mix' not in options or 'size_min' not in options:
            raise ValueError('%r: a workload needs a preset, or a mix '
                             '(get=, put=...) and a size' % spec)
        base = Workload(name or 'custom', options.pop('mix'),
                        options.pop('size_min'), options.pop('size_max'))
    if name:
        options['name'] = name
    return base.with_options(**options)


def scaled(workload, scale):
    """The workload with object sizes multiplied by `scale` (at least one
    byte): the MOS video and backup sizes do not fit a test machine."""
    if scale == 1:
        return workload
    return workload.with_options(
        size_min=max(1, int(workload.size_min * scale)),
        size_max=max(1, int(workload.size_max * scale)))


class Chooser(object):
    """Draws a client's next operation, object and object size; seeded,
    so a run can be repeated operation for operation."""

    def __init__(self, workload, seed=None):
        self.workload = workload
        self.rng = random.Random(seed)
        self._ops = [op for op, _ in workload.mix]
        self._weights = [share for _, share in workload.mix]
        self._zipf = workload.zipf
        # with Zipf: _cumulative[k - 1] is the sum of 1/j^S for j <= k
        self._cumulative = []
        if self._zipf is not None:
            self._rank_weights(workload.objects)

    def _rank_weights(self, n):
        cumulative = self._cumulative
        while len(cumulative) < n:
            rank = len(cumulative) + 1
            cumulative.append((cumulative[-1] if cumulative else 0.0) +
                              rank ** -self._zipf)

    def index(self, n):
        """The position of the next object to read, delete or overwrite
        in a set of n (n >= 1): uniform, or with Zipf position k - 1 with
        probability proportional to 1/k^S (position 0 the most popular;
        objects added to the set later rank after the seeded ones)."""
        if self._zipf is None:
            return self.rng.randrange(n)
        self._rank_weights(n)
        return bisect.bisect_right(
            self._cumulative, self.rng.random() * self._cumulative[n - 1],
            0, n - 1)

    def operation(self, have_objects=True):
        op = self.rng.choices(self._ops, self._weights)[0]
        if not have_objects and op != 'PUT':
            # nothing left to read or delete: write one instead
            return 'PUT'
        return op

    def size(self):
        w = self.workload
        return self.rng.randint(w.size_min, w.size_max)
