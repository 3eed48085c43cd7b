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
"""Ring variants for ``tools/bench`` and ``tools/bench-weights``: a storage
policy's object ring with its device weights set from class weights W.

A ring variant (``--ring-variant NAME=MODE:POLICY=W``, e.g.
``chosen=default:standard=0.5,0.5``) is MODE run with POLICY's ring
weighted so that each performance class (slowest first, as the classes
file of ``swift-mass devices`` orders them) has its share of W of the
ring's total weight.  The ring is what ``swift-mass weights apply --alpha
1`` would make of the builder (:func:`swift_mass.devices.weights.step`, so
the same refusals hold), built in memory once, never written to the builder:
the bench installs its ring file for the variant's runs and the
original ring file for the others, as an operator pushes a ring, and puts
the original back at the end.

Nothing moves data between runs: each run writes its own starting
objects, placed by the ring then in force.  After a ring file changes the
bench waits until every proxy may have loaded it (Swift's
``Ring.reload_time``, 15 s).
"""
import os
import tempfile
import time

from swift.common.ring import RingBuilder
from swift.common.utils import renamer

from swift_mass.devices import lookup, weights
from swift_mass.devices.classes import classes_path, load_classes

# swift.common.ring.Ring's reload_time (seconds), which the proxies use:
# how long a new ring file may go unnoticed
RING_RELOAD_SECONDS = 15


class RingVariant(object):
    """A mode run with a policy's ring weighted by class weights W."""

    FORM = 'NAME=MODE:POLICY=W (W: class shares, slowest first, e.g. 0.3,0.7)'

    def __init__(self, name, mode, policy, shares):
        self.name, self.mode = name, mode
        self.policy, self.shares = policy, shares

    @classmethod
    def parse(cls, text, modes):
        name, _, rest = text.partition('=')
        mode, _, spec = rest.partition(':')
        policy, _, shares = spec.partition('=')
        name, mode, policy = name.strip(), mode.strip(), policy.strip()
        try:
            values = tuple(float(s) for s in shares.split(','))
        except ValueError:
            values = ()
        if not name or name in modes or mode not in modes or not policy or \
                not values:
            raise ValueError(
                '--ring-variant: %r; expected %s with MODE one of %s and a '
                'NAME that is not one of them' % (text, cls.FORM,
                                                  ', '.join(modes)))
        return cls(name, mode, policy, values)


def weighted_ring(swift_dir, policy, shares, classes_file=None, seed=1):
    """(ring path, the ring file's bytes with POLICY's device weights at
    class shares ``shares``, the step's report).  ValueError when the
    weights do not fit the classes or the step is refused."""
    classes = load_classes(classes_path(swift_dir, classes_file))
    order = classes['classes']
    checked = lookup.check_weights(list(shares), order)
    device_class = {k: v['class'] for k, v in classes['devices'].items()}
    builder_path, ring_path = weights.ring_files(swift_dir, policy)
    builder = RingBuilder.load(builder_path)
    report, trial = weights.step(builder, device_class,
                                 dict(zip(order, checked)), 1.0, seed)
    if report['refusals']:
        raise ValueError('%s weighted %s: %s' % (
            policy, ','.join('%g' % s for s in checked),
            '; '.join(report['refusals'])))
    return ring_path, _ring_bytes((trial or builder).get_ring()), report


def _ring_bytes(ring):
    # the bytes RingData.save writes (its gzip header has a fixed time),
    # as swift-ring-builder would have written them
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'object.ring.gz')
        ring.save(path)
        with open(path, 'rb') as fp:
            return fp.read()


class RingSwitcher(object):
    """Installs each mode's ring files and puts the originals back.

    ``variants``: {name: RingVariant}; the rings are built at once, so a
    variant that cannot be built stops the bench before any run.
    """

    def __init__(self, variants, swift_dir='/etc/swift', classes_file=None,
                 sleep=time.sleep, wait=RING_RELOAD_SECONDS + 1):
        self.sleep, self.wait = sleep, wait
        self.rings = {}      # variant name -> {ring path: bytes}
        self.reports = {}
        self.originals = {}  # ring path -> bytes
        for name, variant in variants.items():
            path, data, report = weighted_ring(
                swift_dir, variant.policy, variant.shares, classes_file)
            self.rings[name] = {path: data}
            self.reports[name] = report
            if path not in self.originals:
                with open(path, 'rb') as fp:
                    self.originals[path] = fp.read()
        self.installed = dict(self.originals)

    def install(self, variant=None, wait=True):
        """The ring files of ``variant`` (None: the originals) in place;
        True if a file changed (and, with ``wait``, the proxies were given
        time to load it)."""
        wanted = dict(self.originals, **self.rings.get(variant, {}))
        changed = [p for p, data in wanted.items()
                   if self.installed.get(p) != data]
        for path in changed:
            _write(path, wanted[path])
            self.installed[path] = wanted[path]
        if changed and wait:
            self.sleep(self.wait)
        return bool(changed)

    def restore(self):
        """The original ring files, without waiting."""
        self.install(None, wait=False)


def _write(path, data):
    tmp = path + '.mass-bench'
    with open(tmp, 'wb') as fp:
        fp.write(data)
    renamer(tmp, path)
