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
"""Where it runs: the proxy (the ``mass`` filter).

Which policy this proxy worker applies to a tenant now.  The leader
publishes the policy table; each worker loads its changes on its own tick
(``interval``), so a decision is in force on a worker some time after the
leader made it, and not on every worker at once.  The workload-change
benchmark (docs/benchmarks/adaptation) times a change until the new policy
is in force on every worker, and an operator can check a rollout the same
way, by asking the workers rather than assuming ``interval``.

A reseller admin's account HEAD with ``X-Mass-Policy: true``
(:data:`swift_mass.tags.POLICY_REQUEST_HEADER`) is answered here, once
Swift's own authorisation allowed it: 200 with the tenant's policy on this
worker (:func:`swift_mass.tags.policy_value`: class, substore and method,
``-`` for none; all three ``-`` when the worker has no entry for the
tenant, or the tenant is opted out), the version of the policy table the
worker holds, and the worker's process id.  From anyone else the header is
dropped with the forged tags, and the HEAD is Swift's.
"""
import os

from swift.common.swob import HTTPOk
from swift.common.utils import split_path

from swift_mass import tags
from swift_mass.proxy.authorization import authorized


class PolicyInForce(object):
    """Answers a reseller admin's request for the policy this worker
    applies to an account's tenant (``agent``: the worker's
    :class:`~swift_mass.control.agent.Agent`; ``app``: the app right of
    Mass, through which anything else goes on)."""

    def __init__(self, app, agent):
        self.app = app
        self.agent = agent

    @staticmethod
    def asked(env, header):
        """Whether a request asks for its tenant's policy: a HEAD of an
        account that came with the header (``header``: its value, which
        the filter took out of the request before it dropped the forged
        tags)."""
        if header is None or env.get('REQUEST_METHOD') != 'HEAD':
            return False
        try:
            _, _, container = split_path(env['PATH_INFO'], 2, 3, True)
        except ValueError:
            return False
        return container is None

    def __call__(self, env, start_response, tenant):
        if not env.get('reseller_request') or not authorized(env):
            return self.app(env, start_response)
        entry = self.agent.policy(tenant)
        value = tags.policy_value(None, None, None) if entry is None else \
            tags.policy_value(entry.cls, entry.substore, entry.method)
        return HTTPOk(headers={
            tags.POLICY_RESPONSE_HEADER: value,
            tags.TABLE_VERSION_RESPONSE_HEADER: str(self.agent.table_version),
            tags.WORKER_RESPONSE_HEADER: str(os.getpid())})(
                env, start_response)
