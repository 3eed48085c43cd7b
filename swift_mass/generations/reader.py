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
"""A proxy's side of the generations (:mod:`swift_mass.generations`): the
validity a cached body is stored and served under, and whether every
device of the object rings has an object server that bumps."""
import collections

from swift.common.utils import Timestamp

from swift_mass.generations.core import Generations, decoded, new_token
from swift_mass.lua import read_script


class Written(collections.namedtuple('Written', 'timestamp sealed data')):
    """The newest write recorded for an object (``timestamp``, a
    Timestamp), whether it is a fence sealed in the reader's era
    (:meth:`GenerationReader.read`), and then the newest data write's
    (``data``, a Timestamp: a POST changes the metadata of the data it
    finds, so a replica that missed a PUT may still show the newest
    metadata)."""
    __slots__ = ()

    def covers(self, timestamp, data_timestamp):
        """Whether a version whose metadata and data have these
        timestamps (X-Backend-Timestamp, X-Backend-Data-Timestamp) is no
        older than the writes recorded.  By time alone (``raw``): a
        client's write has a time of its own, and what Swift's and Mass's
        own processes write again of a version (the copy ``swift-mass
        migrate`` stages, its fence and delete) keeps the version's time
        and differs by its offset only."""
        try:
            if Timestamp(timestamp).raw < self.timestamp.raw:
                return False
            return self.data is None or \
                Timestamp(data_timestamp or timestamp).raw >= self.data.raw
        except (TypeError, ValueError):
            return False


def era(epoch, entered):
    """What a fence is sealed in (seal.lua): the epoch, and the version
    of the bumped set the tenant entered in."""
    return '%s:%s' % (epoch, entered)


def parse_generation(value):
    """``(token, seal, written)`` of an object's generation as Redis holds
    it ("<token>[|<era>:<data>]/<written>", bump.lua and seal.lua): seal
    ``(era, data)``, the era its fence was sealed in and the newest data
    write's Timestamp, or None; written a Timestamp or None."""
    head, _, written = value.partition('/')
    token, _, seal = head.partition('|')
    era_of, _, data = seal.rpartition(':')
    try:
        written = Timestamp(written) if written else None
        seal = (era_of, Timestamp(data)) if era_of and data else None
    except ValueError:
        written = seal = None
    return token, seal, written


class GenerationReader(Generations):
    """Generations as a proxy's cache reads them; its parameters are
    :class:`~swift_mass.generations.core.Generations`'."""

    _READ = read_script(__package__, 'read')
    _COVERAGE = read_script(__package__, 'coverage')
    _SEAL = read_script(__package__, 'seal')

    def __init__(self, url, logger, **kwargs):
        super(GenerationReader, self).__init__(url, logger, **kwargs)
        self._read = self.client.register_script(self._READ)
        self._coverage_script = self.client.register_script(self._COVERAGE)
        self._seal = self.client.register_script(self._SEAL)
        # (when checked, devices not registered, lowest version applied)
        self._coverage = (0.0, None, None)

    def read(self, key, tenant):
        """``(validity, written)`` of an object of ``tenant`` now: validity
        a string that changes with every write, written the newest write
        recorded for it (a :class:`Written`) or None.  That write is a
        *fence* only when it was sealed (:meth:`seal`) in the era the
        reader is in now (the same epoch, and the same membership of the
        tenant in the bumped set): only then is no write acknowledged
        before this read newer than it (docs/cache.md, "Why no fill is
        older than an acknowledged write"); else a fill must read the
        newest replica.  ``(None, None)`` when Redis cannot tell,
        or the generations are not to be trusted: the tenant is not
        bumped, or not yet by every object server (call :meth:`uncovered`
        first: it finds the lowest version they apply)."""
        if not self.available():
            return None, None
        try:
            epoch, gen, entered = self._read(
                keys=[self.epoch_key, self.alive_key, self._key(key),
                      self.bumps_key],
                args=self._epoch_args() + [new_token(), self.ttl, tenant])
        except Exception as err:
            self.failed(err)
            return None, None
        self.breaker.succeeded()
        epoch, gen, entered = decoded(epoch), decoded(gen), decoded(entered)
        applied = self._coverage[2]
        if not entered or applied is None or int(entered) > applied:
            return None, None
        token, seal, written = parse_generation(gen)
        if written is not None:
            if seal is not None and seal[0] == era(epoch, entered):
                written = Written(written, True, seal[1])
            else:
                written = Written(written, False, None)
        return '%s:%s:%s' % (epoch, token, entered), written

    def seal(self, key, tenant, validity, timestamp, data_timestamp=None):
        """Seal the fence of an object of ``tenant`` after a read of its
        newest replica (X-Newest) that began under ``validity`` and
        returned the version of ``timestamp`` (its metadata's; its data's
        ``data_timestamp``, the same if None): from now on, and while the
        era lasts, :meth:`read` answers the highest of that and every
        write recorded since.  Whether the object is still at ``validity``
        (nothing written since: what the read returned may be cached), as
        :meth:`read` would tell; False when Redis cannot tell."""
        epoch, token, entered = validity.split(':')
        try:
            data_timestamp = Timestamp(
                data_timestamp or timestamp).internal
            timestamp = Timestamp(timestamp).internal
        except (TypeError, ValueError):
            return False
        if not self.available():
            return False
        try:
            sealed = self._seal(
                keys=[self.epoch_key, self.alive_key, self._key(key),
                      self.bumps_key],
                args=self._epoch_args() + [token, epoch, entered, tenant,
                                           timestamp, data_timestamp])
        except Exception as err:
            self.failed(err)
            return False
        self.breaker.succeeded()
        return int(sealed) == 1

    def uncovered(self, required, period=5.0):
        """The names of the devices ``required()`` answers (ring devices,
        as :func:`swift_mass.ring_devices.device_name` makes them) that no
        object server has registered as bumping their writes, looked up at
        most every ``period`` seconds; None when Redis could not tell."""
        checked, missing, _applied = self._coverage
        now = self.clock()
        if missing is not None and now < checked + period:
            return missing
        if not self.available():
            return None
        try:
            required = sorted(required())
        except Exception as err:
            # a ring being replaced, or broken: unknown, so hits are
            # validated against the object servers meanwhile
            self.logger.warning('mass generations: the ring devices could '
                                'not be read: %s', err)
            return None
        try:
            found = self._coverage_script(
                keys=[self.bumper_prefix + name for name in required]) \
                if required else []
        except Exception as err:
            self.failed(err)
            return None
        missing = frozenset(name for name, value in zip(required, found)
                            if int(value) < 0)
        applied = min(map(int, found)) if found and not missing else None
        if missing != self._coverage[1]:
            if missing:
                self.logger.warning(
                    'mass generations: %d device(s) have no object server '
                    'bumping generations (mass_queue with redis_url), so '
                    'cached bodies are validated against the object '
                    'servers: %s', len(missing),
                    ', '.join(sorted(missing)[:5]))
            elif self._coverage[1]:
                self.logger.info('mass generations: every device bumps')
        self._coverage = (now, missing, applied)
        return missing
