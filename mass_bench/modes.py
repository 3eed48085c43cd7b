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
"""The modes tools/bench compares on the SAIO (mass_bench.bench says what
each is): ``default`` and ``placed`` without Mass in the proxies'
pipelines, ``static`` and ``mass`` with it; a variant, one of them with
other ``[filter:mass_queue]`` or ``[filter:mass]`` options on the servers
(``tools/saio queue``, ``tools/saio mass``), and a ring variant, one of
them with a policy's ring weighted by class (mass_bench.rings).  Switching
the cluster from one to another (:class:`Modes`) runs in the benchmark's
process and changes the SAIO through tools/saio and the shared store."""
import configparser
import logging
import os
import subprocess
import time

from mass_bench import placement, policy_table, queue_refusals, rings, \
    summary
from swift_mass.conf import SECTION, QueueConf
from swift_mass.shared_store import shared_store

MODES = ('default', 'placed', 'static', 'mass')
# the modes that run without Mass in the pipelines
WITHOUT_MASS = ('default', 'placed')
PROXY_CONF = '/etc/swift/proxy-server.conf'
# Any object server's config: tools/saio queue sets the same
# [filter:mass_queue] options in all of them.
OBJECT_CONF = '/etc/swift/object-server/1.conf'
# a variant's OPTION so named is the proxies' [filter:mass] option NAME
MASS_OPTION_PREFIX = 'mass.'


class Variant(object):
    """A mode run with other ``[filter:mass_queue]`` options (``options``)
    and other ``[filter:mass]`` options (``mass_options``)."""

    FORM = 'NAME=MODE:OPTION=VALUE[+OPTION=VALUE...]'

    def __init__(self, name, mode, options, mass_options=None):
        self.name, self.mode, self.options = name, mode, options
        self.mass_options = mass_options or {}

    @classmethod
    def parse(cls, text):
        name, _, rest = text.partition('=')
        mode, _, pairs = rest.partition(':')
        name, mode = name.strip(), mode.strip()
        options, mass_options, bad = {}, {}, not pairs
        for pair in pairs.split('+') if pairs else ():
            option, sep, value = pair.partition('=')
            option, value = option.strip(), value.strip()
            if option.startswith(MASS_OPTION_PREFIX):
                # a proxy option may be emptied (no write substore)
                option = option[len(MASS_OPTION_PREFIX):]
                bad = bad or not sep or not option
                mass_options[option] = value
            else:
                bad = bad or not sep or not option or not value
                options[option] = value
        if not name or name in MODES or mode not in MODES or bad:
            raise ValueError(
                '--variant: %r; expected %s with MODE one of %s and a NAME '
                'that is not one of them' % (text, cls.FORM,
                                             ', '.join(MODES)))
        return cls(name, mode, options, mass_options)


def section_options(path, section, command, options):
    """{option: value} of ``options`` as ``path``'s ``section`` sets them;
    ValueError for one it leaves to its default (the bench could not put
    that back after a variant).  ``command``: the ``tools/saio`` command
    that sets them."""
    if not options:
        return {}
    parser = configparser.RawConfigParser()
    if not parser.read(path) or not parser.has_section(section):
        raise ValueError('--variant: no [%s] in %s' % (section, path))
    missing = [o for o in options if not parser.has_option(section, o)]
    if missing:
        raise ValueError(
            '--variant: %s not set in %s; set the value the other modes '
            'should run with first (tools/saio %s %s)' % (
                ', '.join(sorted(missing)), path, command,
                ' '.join('%s=...' % o for o in sorted(missing))))
    return {o: parser.get(section, o) for o in options}


class ServerOptions(object):
    """One config section the variants change on the SAIO's servers
    (``tools/saio COMMAND OPTION=VALUE...`` sets it and restarts them):
    what every other mode runs with, and what is set now."""

    def __init__(self, saio, command, baseline):
        self.saio, self.command = saio, command
        self.baseline = baseline
        self.now = dict(baseline)

    def set(self, options):
        """The baseline with ``options`` over it, changing only what
        differs from what is set now."""
        wanted = {o: v for o, v in dict(self.baseline, **options).items()
                  if self.now.get(o) != v}
        if not wanted:
            return
        if self.saio is None:
            raise RuntimeError('a variant needs tools/saio (--saio PATH)')
        self.now = {}  # unknown, should the change fail halfway
        subprocess.run([self.saio, self.command] + sorted(
            '%s=%s' % pair for pair in wanted.items()), check=True,
            stdout=subprocess.DEVNULL)
        self.now = dict(self.baseline, **options)


def default_saio():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(here, 'tools', 'saio')
    return path if os.path.exists(path) else None


class Modes(object):
    """The SAIO as the modes of a comparison set it (the base of
    mass_bench.driver.Bench, which runs the workloads in them): Mass in
    or out of the proxies' pipelines (``tools/saio pipeline``), the
    servers' options a variant changes, a ring variant's ring, the
    tenants' pins in ``static``, their containers' policies in
    ``placed`` and ``mass``'s cold start (the pins deleted, the tenants
    forgotten: :meth:`forget`); and the shared store that pins and
    forgets them, whose policy table the bench samples, as it samples
    the queues' refusals in the modes that have queues."""

    def __init__(self, tenants, auth_url, saio=None, conf=PROXY_CONF,
                 progress=print, settle=None, variants=(),
                 object_conf=OBJECT_CONF, ring_variants=(),
                 swift_dir='/etc/swift', classes_file=None):
        self.tenants = tenants
        self.variants = {v.name: v for v in variants}
        self.queue = ServerOptions(saio, 'queue', section_options(
            object_conf, QueueConf.section, 'queue',
            {o for v in variants for o in v.options}))
        self.mass_options = ServerOptions(saio, 'mass', section_options(
            conf, SECTION, 'mass',
            {o for v in variants for o in v.mass_options}))
        self.ring_variants = {v.name: v for v in ring_variants}
        self.rings = rings.RingSwitcher(
            self.ring_variants, swift_dir, classes_file) \
            if ring_variants else None
        self.auth_url = auth_url
        # whose object rings name the object servers to ask for refusals
        self.swift_dir = swift_dir
        self.saio = saio
        self.conf = conf
        self.progress = progress
        self.mode = None
        self.base_mode = None  # the mode a variant runs as
        self.store = None
        self.settle = settle
        self.pinned = set()
        # whether each mass run starts cold (the workload-change
        # experiments, --staged: docs/benchmarks/adaptation); the steady
        # state's mass runs start from what the loop holds
        self.cold_start = False
        # whether each run starts from an empty cluster (--reset-data)
        self.reset_data = False
        self.pipeline = None  # 'with' or 'without' once switched
        # {tenant label: its containers' policy in placed, '' for the
        # default}, found when placed first runs
        self.placement = None

    def _store(self):
        if self.store is None:
            conf, self.store = shared_store(self.conf,
                                            logging.getLogger('mass_bench'))
            if self.settle is None:
                # every worker loads the table within one interval
                self.settle = 2 * conf.interval + 0.5
        return self.store

    def _pipeline(self, mode):
        if self.saio is None:
            raise RuntimeError('switching Mass in and out of the pipeline '
                               'needs tools/saio (--saio PATH)')
        self.pipeline = 'unknown'
        subprocess.run([self.saio, 'pipeline', mode], check=True,
                       stdout=subprocess.DEVNULL)
        self.pipeline = mode

    def wipe_data(self):
        """Wipe the cluster's accounts, containers and objects
        (``tools/saio reset``: Swift stopped and started again, memcached
        flushed, Redis and the configs kept), so that a run starts from an
        empty cluster; the next :meth:`switch` logs the tenants in again
        (the flush took their tokens)."""
        if self.saio is None:
            raise RuntimeError('wiping the cluster\'s data needs '
                               'tools/saio (--saio PATH)')
        began = time.time()
        subprocess.run([self.saio, 'reset'], check=True,
                       stdout=subprocess.DEVNULL)
        self.progress('reset: the cluster\'s data wiped in %.0f s '
                      '(tools/saio reset)' % (time.time() - began))

    def restore_pipeline(self):
        """Put Mass back in the pipelines if a mode took it out: the
        cluster as the bench found it."""
        if self.pipeline not in (None, 'with'):
            self._pipeline('with')

    def restore_options(self):
        """Put back the servers' options a variant changed."""
        self.queue.set({})
        self.mass_options.set({})

    def restore_rings(self):
        """Put back the ring files a ring variant replaced."""
        if self.rings:
            self.rings.restore()

    def switch(self, mode):
        variant = self.variants.get(mode)
        ring_variant = self.ring_variants.get(mode)
        self.queue.set(variant.options if variant else {})
        self.mass_options.set(variant.mass_options if variant else {})
        if self.rings:
            self.rings.install(mode if ring_variant else None)
        base = variant or ring_variant
        self._switch(base.mode if base else mode)
        self.mode = mode

    def _switch(self, mode):
        want = 'without' if mode in WITHOUT_MASS else 'with'
        if self.pipeline != want:
            self._pipeline(want)
        if mode == 'placed' and self.placement is None:
            self.placement = placement.placed_policies(
                self.tenants, placement.class_substores(self.conf))
            self.progress('placed: %s' % ', '.join(
                '%s on %s' % (label, policy or 'the default policy')
                for label, policy in sorted(self.placement.items())))
        if mode == 'static':
            store = self._store()
            for tenant in self.tenants:
                store.set_pin(tenant.account, {
                    'class': tenant.workload.intended_class})
                self.pinned.add(tenant.account)
            time.sleep(self.settle)
        elif mode == 'mass' and self.cold_start:
            # a cold start: no pins, and nothing the control loop learnt
            # of the tenants (their entries, their counts so far)
            self._delete_pins()
            self.forget()
        elif mode == 'mass':
            self.unpin()
        self.mode = self.base_mode = mode
        for tenant in self.tenants:
            # a restarted proxy may have lost the token cache
            tenant.authenticate(self.auth_url)

    def unpin(self):
        if self._delete_pins():
            time.sleep(self.settle)

    def _delete_pins(self):
        """Delete the pins ``static`` set; whether there were any."""
        if not self.pinned:
            return False
        store = self._store()
        for account in self.pinned:
            store.delete_pin(account)
        self.pinned.clear()
        return True

    def forget(self):
        """Make the control loop forget the tenants, as ``swift-mass
        forget`` does (:meth:`Store.forget
        <swift_mass.control.stores.base.Store.forget>`): their entries
        leave the policy table and the leader classifies them afresh from
        their requests after now; then wait until every worker dropped
        the entries."""
        if not self.tenants:
            return
        store = self._store()
        accounts = [tenant.account for tenant in self.tenants]
        store.forget(accounts, time.time())
        self.progress('mass: forgot %s' % ', '.join(sorted(accounts)))
        time.sleep(self.settle)

    def policy_sample(self):
        """The policy table's entries of the tenants now
        (policy_table.table_sample); None when it cannot be read."""
        try:
            _, table = self._store().get_table()
            return policy_table.table_sample(
                table, {t.label: t.account for t in self.tenants})
        except Exception:
            return None

    def classes(self):
        """{label: class} of the tenants now ('unknown' without an
        entry); {} when the table cannot be read."""
        return summary.classes_of(self.policy_sample())

    def mass_in_pipeline(self):
        return self.base_mode in ('static', 'mass')

    def queue_refusals(self):
        """The requests the object servers' mass_queue refused so far
        (mass_bench.queue_refusals); None in a mode without Mass:
        :meth:`_pipeline` takes mass_queue out with it, so no queue
        could refuse, which 0 would not say."""
        if not self.mass_in_pipeline():
            return None
        return queue_refusals.refused_so_far(self.swift_dir)
