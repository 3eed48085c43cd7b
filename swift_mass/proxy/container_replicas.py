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
"""Each replica of a container, as its container server sees it (runs in
the proxy, for ``swift-mass migrate``).

Swift's proxy answers a container DELETE with its quorum: one replica
whose listing still holds rows (object updates it has not had yet) may
refuse it, 409, while the others delete it; the PUT that makes the
container again in another policy is then refused by that replica too,
and the container's replicas disagree on its policy until Swift's
replicator and reconciler merge them.  Meanwhile the proxies whose
container lookup reaches that replica read and write the objects in the
old policy.  So ``swift-mass migrate`` deletes a container it emptied only
once every replica shows it empty, and checks every replica's policy after
it made it again; only the proxy has the rings to ask them.

A reseller admin's container HEAD with ``X-Mass-Replicas: true``
(:data:`swift_mass.tags.REPLICAS_REQUEST_HEADER`) is answered here, once
Swift's own authorisation allowed it: 200, with a header per primary
(:func:`swift_mass.tags.replica_value`) from a direct HEAD of each.  From
anyone else the header is dropped with the forged tags, and the HEAD is
Swift's.
"""
from swift.common.direct_client import direct_head_container
from swift.common.swob import HTTPOk, wsgi_to_str
from swift.common.utils import split_path

from swift_mass import tags
from swift_mass.proxy.authorization import authorized
from swift_mass.proxy.methods.replicas import head_each


class ContainerReplicas(object):
    """Answers a reseller admin's request for a container's replicas
    (``app`` is the app right of Mass, through which anything else goes
    on)."""

    def __init__(self, app, logger, head=direct_head_container):
        self.app = app
        self.logger = logger
        self.head = head
        # the proxy server app, which Swift's pipeline names on each app
        proxy = getattr(app, '_pipeline_final_app', app)
        self.proxy = proxy
        self.conn_timeout = getattr(proxy, 'conn_timeout', 0.5)
        self.node_timeout = getattr(proxy, 'node_timeout', 10.0)

    @staticmethod
    def asked(env, header):
        """Whether a request asks for its container's replicas: a HEAD of
        a container that came with the header (``header``: its value, which
        the filter took out of the request before it dropped the forged
        tags)."""
        if header is None or env.get('REQUEST_METHOD') != 'HEAD':
            return False
        try:
            _, _, container, obj = split_path(env['PATH_INFO'], 3, 4, True)
        except ValueError:
            return False
        return obj is None and container is not None

    def __call__(self, env, start_response):
        if not env.get('reseller_request') or not authorized(env):
            return self.app(env, start_response)
        _, account, container = split_path(env['PATH_INFO'], 3, 3)
        answers = self.answers(wsgi_to_str(account), wsgi_to_str(container))
        headers = {'%s%d' % (tags.REPLICA_RESPONSE_PREFIX, i):
                   tags.replica_value(*answer)
                   for i, answer in enumerate(answers)}
        return HTTPOk(headers=headers)(env, start_response)

    def answers(self, account, container):
        """``[(status, object count, policy index)]`` of each primary of
        the container (status 0 where one did not answer, -1 where it told
        no policy)."""
        part, nodes = self.proxy.container_ring.get_nodes(account, container)
        # a replica's count and policy only where it has the container
        return [(status, int(headers.get('x-container-object-count', 0)),
                 int(headers.get('x-backend-storage-policy-index', -1)))
                if status == 200 else (status, 0, -1)
                for status, headers in head_each(
                    self.head, nodes, (part, account, container),
                    self.conn_timeout, self.node_timeout,
                    self.logger.warning)]
