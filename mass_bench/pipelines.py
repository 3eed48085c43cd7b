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
"""The SAIO's proxy pipeline loaded in the benchmark's process (paste
loadapp of /etc/swift/proxy-server.conf), with Mass and with it removed,
for tools/bench-overhead's in-process measurements (mass_bench.overhead,
mass_bench.fill_cost): the apps, a token and a small object to GET, the
MassMiddleware of a pipeline, and the commands the SAIO's Redis has run.
The backends are the SAIO's storage servers."""
import os
import tempfile

from mass_bench.ticker import Ticker

PROXY_CONF = '/etc/swift/proxy-server.conf'
PROXY = 'http://127.0.0.1:8080'


def pipeline_conf(with_mass):
    """proxy-server.conf as it is, or with mass removed from the pipeline."""
    with open(PROXY_CONF) as fp:
        text = fp.read()
    if not with_mass:
        lines = []
        for line in text.splitlines():
            if line.strip().startswith('pipeline ='):
                line = line.replace(' mass proxy-server', ' proxy-server')
            lines.append(line)
        text = '\n'.join(lines) + '\n'
    fd, path = tempfile.mkstemp(suffix='.conf', dir='/etc/swift')
    with os.fdopen(fd, 'w') as fp:
        fp.write(text)
    return path


def load_pipelines(modes, loop=True):
    """The SAIO proxy pipeline loaded in this process once per mode
    ('with' Mass, or 'without'), a token and the path of a 4 KiB object.
    loop=False: Mass counts and tags but its control loop, whose cost is
    per second, not per request, is held (:func:`hold_loop`)."""
    import eventlet
    eventlet.monkey_patch(all=False, socket=True, select=True, thread=True)
    from swift.common.wsgi import loadapp
    import requests

    from swiftclient.client import get_auth
    _, token = get_auth(PROXY + '/auth/v1.0', 'test:tester', 'testing',
                        timeout=10)
    path = '/v1/AUTH_test/mass-bench/small'
    requests.put(PROXY + '/v1/AUTH_test/mass-bench', timeout=10,
                 headers={'X-Auth-Token': token})
    requests.put(PROXY + path, data=b's' * 4096, timeout=10,
                 headers={'X-Auth-Token': token})
    apps = {}
    for mode in modes:
        conf = pipeline_conf(mode == 'with')
        try:
            apps[mode] = loadapp(conf)
        finally:
            os.unlink(conf)
        if mode == 'with' and not loop:
            hold_loop(mass_of(apps[mode]))
    return apps, token, path


def hold_loop(mass):
    """The control loop of MassMiddleware ``mass`` held: it starts with
    the first request, as in a proxy worker, but none of its ticks is due
    until the bench steps the agent's ticker (mass_bench.ticker; as
    tick_cost does); and the policy table read once, as the loop would
    load it: the tenant's class tag is part of what a request costs."""
    mass.agent.ticker = Ticker(mass.agent.interval, held=True)
    mass.agent.refresh()


def mass_of(app):
    while type(app).__name__ != 'MassMiddleware':
        app = app.app
    return app


def get_requests(app, token, path, n):
    from swift.common.swob import Request
    for _ in range(n):
        resp = Request.blank(path, headers={
            'X-Auth-Token': token}).get_response(app)
        assert resp.status_int == 200 and len(resp.body) == 4096, \
            resp.status


def redis_calls():
    """Commands the SAIO's Redis has run since it started (INFO
    commandstats), or None."""
    import redis
    from swift_mass.conf import SECTION
    from swift_mass.proxy.conf import MassConf
    from swift.common.utils import readconf
    try:
        url = MassConf(readconf(PROXY_CONF, SECTION)).store.redis_url
        stats = redis.Redis.from_url(url, socket_timeout=2).info(
            'commandstats')
    except Exception:
        return None
    return sum(v['calls'] for v in stats.values())
