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
"""The SAIO's own proxy pipeline without gatekeeper, run in the test's
process against the SAIO's real servers.

Gatekeeper strips every ``X-Backend-*`` header a client sends, so through
the SAIO's proxies a forged Mass tag never reaches Mass, and a test of
Mass's own stripping would pass with the stripping deleted.  This pipeline
is the SAIO's (same config, same auth, memcached, Redis and storage
servers) with gatekeeper left out, as a middleware left of Mass that
passes client headers through would leave it: what a forged tag does
there is what Mass alone lets through.
"""
import os
import tempfile

from swift.common.swob import Request
from swift.common.wsgi import loadapp

from tests.functional.conftest import PROXY_CONF


def pipeline_without_gatekeeper(conf_path=PROXY_CONF):
    """The proxy app of ``conf_path`` with gatekeeper out of its
    pipeline (Swift would put it back unless told not to)."""
    lines = []
    with open(conf_path) as conf:
        for line in conf:
            if line.replace(' ', '').startswith('pipeline='):
                words = line.split()
                assert 'gatekeeper' in words, line
                line = ' '.join(w for w in words if w != 'gatekeeper') + '\n'
            lines.append(line)
    fd, path = tempfile.mkstemp(suffix='.conf', prefix='mass-ungated-')
    try:
        with os.fdopen(fd, 'w') as conf:
            conf.writelines(lines)
        return loadapp(path, allow_modify_pipeline=False)
    finally:
        os.unlink(path)


def request(app, tenant, method, path, headers=None, body=None):
    """``tenant``'s request (a conftest.Tenant: its token, its account)
    through ``app``; the swob Response, body read."""
    headers = dict(headers or {}, **{'X-Auth-Token': tenant.token})
    req = Request.blank('/v1/%s%s' % (tenant.account, path),
                        environ={'REQUEST_METHOD': method},
                        headers=headers, body=body)
    resp = req.get_response(app)
    resp.body  # read it all: the request is over when its body is
    return resp
