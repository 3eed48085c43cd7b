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
"""The reaction time of a phased run (mass_bench.reaction): read from the
proxy workers' own answers, a real mass filter's behind a WSGI server."""
import threading
import wsgiref.simple_server

import pytest

from mass_bench import phases, reaction, report
from swift_mass.control.entry import PolicyEntry
from swift_mass.control.stores.local import LocalStore
from swift_mass.proxy import middleware as proxy
from tests.unit.helpers import RecordingApp

OLD = ['write', 'bulk', 'batch', 3]
NEW = ['read', 'fast', 'cache', 4]


def samples(*rows):
    """[[offset, {'backup': {pid: policy}}]] of (offset, {pid: policy})."""
    return [[t, {'backup': workers}] for t, workers in rows]


def test_the_reaction_is_when_every_worker_applies_the_new_policy():
    found = reaction.reaction(samples(
        (0.0, {'1': OLD, '2': OLD}),
        (1.0, {'1': NEW, '2': OLD}),
        (2.0, {'1': NEW}),  # worker 2 did not answer in this second
        (3.0, {'1': NEW, '2': NEW}),
        (4.0, {'1': NEW, '2': NEW})), 'backup', 0.0, 5.0)
    assert found == {'policy': ['read', 'fast', 'cache'], 'changed': True,
                     'seconds': 2.0}


def test_a_worker_that_goes_back_restarts_the_clock():
    found = reaction.reaction(samples(
        (0.0, {'1': OLD, '2': OLD}),
        (1.0, {'1': NEW, '2': NEW}),
        (2.0, {'1': NEW, '2': OLD}),  # a worker behind the others
        (3.0, {'1': NEW, '2': NEW})), 'backup', 0.0, 4.0)
    assert found['seconds'] == 3.0


def test_no_change_is_no_reaction():
    found = reaction.reaction(samples(
        (0.0, {'1': NEW, '2': NEW}), (1.0, {'1': NEW})), 'backup', 0.0, 2.0)
    assert found == {'policy': ['read', 'fast', 'cache'], 'changed': False,
                     'seconds': 0.0}


def test_workers_that_never_all_applied_it_have_no_reaction_time():
    found = reaction.reaction(samples(
        (0.0, {'1': OLD, '2': OLD, '3': OLD}),
        (1.0, {'1': NEW, '2': NEW, '3': OLD})), 'backup', 0.0, 2.0)
    assert found['policy'] == ['read', 'fast', 'cache']
    assert found['seconds'] is None


def test_only_the_phases_samples_count():
    rows = samples((0.0, {'1': OLD}), (5.0, {'1': OLD}), (6.0, {'1': NEW}),
                   (9.0, {'1': NEW}))
    assert reaction.reaction(rows, 'backup', 5.0, 10.0)['seconds'] == 1.0
    assert reaction.reaction(rows, 'backup', 10.0, 20.0) is None
    assert reaction.reaction(rows, 'photos', 0.0, 10.0) is None


def run_with(found):
    return {'mode': 'mass', 'phases': [{'reaction': {'backup': found}}]}


def test_the_phases_reactions_over_the_cycles():
    new = {'policy': NEW[:3], 'changed': True}
    runs = [run_with(dict(new, seconds=2.0)), run_with(dict(new, seconds=4.0)),
            run_with(dict(new, seconds=3.0)),
            {'mode': 'placed', 'phases': [{}]}]
    seen = phases.reactions(runs, 0)
    assert seen == {'mass': {'backup': {
        'median': 3.0, 'worst': 4.0, 'changed': 3, 'runs': 3,
        'policies': [NEW[:3]] * 3}}}
    runs.append(run_with(dict(new, seconds=None)))
    assert phases.reactions(runs, 0)['mass']['backup']['worst'] is None
    lines = report.format_reaction(phases.reactions(runs, 0))
    assert lines == ['  reaction, mass backup: changed in 4 of 4 runs, to '
                     'read fast cache; on every worker after 3.0 s '
                     '(median), never (worst)']


@pytest.fixture
def served():
    """A mass filter (one worker, a local store with a table) behind a
    WSGI server on a free loopback port, as a reseller admin reaches it
    (tempauth's marks set by a stand-in auth)."""
    store = LocalStore()
    store.put_table({'AUTH_backup': PolicyEntry(
        'write', substore='bulk', method='batch', pinned=True)})
    mass = proxy.MassMiddleware(RecordingApp(), {
        'store': 'local', 'read_substore': 'fast', 'write_substore': 'bulk',
        'urgent_recheck_seconds': '0'}, store=store)

    def auth(env, start_response):
        if env.get('HTTP_X_AUTH_TOKEN') == 'reseller':
            env['reseller_request'] = True
        env['swift.authorize'] = lambda req: None
        return mass(env, start_response)

    class Quiet(wsgiref.simple_server.WSGIRequestHandler):
        def log_message(self, *args):
            pass
    server = wsgiref.simple_server.make_server('127.0.0.1', 0, auth,
                                               handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield 'http://127.0.0.1:%d/v1/AUTH_admin' % server.server_port, \
            store
    finally:
        server.shutdown()
        server.server_close()


def test_the_probe_reads_what_the_worker_applies(served):
    url, store = served
    probe = reaction.WorkerProbe(url, 'reseller', {'backup': 'AUTH_backup'},
                                 asks=2)
    [(pid, policy)] = probe.sample()['backup'].items()
    assert int(pid) > 0
    assert policy == ['write', 'bulk', 'batch', store.table_version()]


def test_a_probe_that_is_not_a_reseller_admin_reads_nothing(served):
    url, _ = served
    probe = reaction.WorkerProbe(url, 'someone', {'backup': 'AUTH_backup'})
    assert probe.sample() == {'backup': {}}
    down = reaction.WorkerProbe('http://127.0.0.1:9', 'reseller',
                                {'backup': 'AUTH_backup'}, timeout=0.5)
    assert down.sample() == {'backup': {}}


def test_a_bench_probes_the_workers_only_with_mass_and_a_reseller(
        monkeypatch):
    from mass_bench import clients, driver
    tenant = clients.Tenant.parse('backup:job:job=C')
    tenant.url = 'http://p/v1/AUTH_backup'
    b = driver.Bench([tenant], 'http://auth', progress=lambda *a, **k: None)
    b.base_mode = 'mass'
    assert b.probe() is None  # no reseller admin given
    b.reseller = clients.Tenant.reseller('admin:admin:secret')
    assert (b.reseller.user, b.reseller.key) == ('admin:admin', 'secret')

    def authenticate(auth_url):
        b.reseller.url, b.reseller.token = 'http://p:8080/v1/AUTH_admin', 't'
    monkeypatch.setattr(b.reseller, 'authenticate', authenticate)
    probe = b.probe()
    assert (probe.netloc, probe.token, probe.accounts) == (
        'p:8080', 't', {'backup': 'AUTH_backup'})
    b.base_mode = 'placed'  # Swift alone: no worker to ask
    assert b.probe() is None
    with pytest.raises(ValueError):
        clients.Tenant.reseller('admin:admin')
