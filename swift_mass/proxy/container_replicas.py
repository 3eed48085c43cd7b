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

Swift's proxy lists a container from one replica, the first to answer:
a row that one replica still lists after the others dropped it (an
object replica refused the move's DELETE, 412, after it took the fence,
while a quorum took the DELETE; or a container update that timed out) is
seen only by the listings that happen to read that replica.  So the
command also reads each replica's own listing, and settles every such
row of its own deletes at once.

A reseller admin's container HEAD with ``X-Mass-Replicas: true``
(:data:`swift_mass.tags.REPLICAS_REQUEST_HEADER`) is answered here, once
Swift's own authorisation allowed it: 200, with a header per primary
(:func:`swift_mass.tags.replica_value`) from a direct HEAD of each; its
GET, 200 with the same headers and the union of the primaries' listings
(:func:`merged_listing`), a page after the request's ``marker`` of at
most ``limit`` rows (taken as Swift's listing takes them), from a direct
GET of each.  The union is a container listing as Swift's, row for row, so
the middlewares left of Mass that rewrite listings (slo, symlink,
listing_formats) read it as they read Swift's, and a client pages through
it as through Swift's (``marker``: the last name; a short page is the
last).  From anyone else the header is dropped with the forged tags, and
the request is Swift's.
"""
import functools
import json

from swift.common.constraints import CONTAINER_LISTING_LIMIT
from swift.common.direct_client import direct_get_container, \
    direct_head_container
from swift.common.request_helpers import constrain_req_limit, get_param
from swift.common.swob import HTTPException, HTTPOk, Request, wsgi_to_str
from swift.common.utils import Timestamp, split_path

from swift_mass import tags
from swift_mass.proxy.authorization import authorized
from swift_mass.proxy.methods.replicas import ask_each


class ContainerReplicas(object):
    """Answers a reseller admin's request for a container's replicas
    (``app`` is the app right of Mass, through which anything else goes
    on)."""

    def __init__(self, app, logger, head=direct_head_container,
                 get=direct_get_container):
        self.app = app
        self.logger = logger
        self.head = head
        self.get = get
        # the proxy server app, which Swift's pipeline names on each app
        proxy = getattr(app, '_pipeline_final_app', app)
        self.proxy = proxy
        self.conn_timeout = getattr(proxy, 'conn_timeout', 0.5)
        self.node_timeout = getattr(proxy, 'node_timeout', 10.0)

    @staticmethod
    def asked(env, header):
        """Whether a request asks for its container's replicas: a HEAD or
        GET of a container that came with the header (``header``: its
        value, which the filter took out of the request before it dropped
        the forged tags)."""
        if header is None or env.get('REQUEST_METHOD') not in ('HEAD', 'GET'):
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
        account, container = wsgi_to_str(account), wsgi_to_str(container)
        if env['REQUEST_METHOD'] == 'GET':
            req = Request(env)
            # the limit and marker as Swift's container listing takes them
            try:
                limit = constrain_req_limit(req, CONTAINER_LISTING_LIMIT)
                marker = get_param(req, 'marker', '')
            except HTTPException as refusal:
                return refusal(env, start_response)
            answers, listings = self.listings(account, container, marker,
                                              limit)
            return HTTPOk(
                headers=replica_headers(answers),
                body=json.dumps(merged_listing(listings, limit)).encode(
                    'utf-8'),
                content_type='application/json', charset='utf-8')(
                env, start_response)
        return HTTPOk(headers=replica_headers(
            self.answers(account, container)))(env, start_response)

    def answers(self, account, container):
        """``[(status, object count, policy index)]`` of each primary of
        the container (status 0 where one did not answer, -1 where it told
        no policy)."""
        part, nodes = self.proxy.container_ring.get_nodes(account, container)
        return [replica_answer(status, headers)
                for status, headers in ask_each(
                    self.head, nodes, (part, account, container),
                    self.conn_timeout, self.node_timeout,
                    self.logger.warning)]

    def listings(self, account, container, marker, limit):
        """:meth:`answers` from a direct GET of each primary, and the rows
        each listed after ``marker``, ``limit`` at most (none where it did
        not answer 200)."""
        part, nodes = self.proxy.container_ring.get_nodes(account, container)
        get = functools.partial(self.get, marker=marker or None,
                                limit=limit)
        found = ask_each(get, nodes, (part, account, container),
                         self.conn_timeout, self.node_timeout,
                         self.logger.warning, method='GET')
        return ([replica_answer(status, answer[0] if status == 200
                                else answer) for status, answer in found],
                [answer[1] if status == 200 else []
                 for status, answer in found])


def replica_answer(status, headers):
    """``(status, object count, policy index)`` of a replica's answer; its
    count and policy only where it has the container."""
    if status != 200:
        return status, 0, -1
    return (status, int(headers.get('x-container-object-count', 0)),
            int(headers.get('x-backend-storage-policy-index', -1)))


def replica_headers(answers):
    """The response headers that show each replica's answer."""
    return {'%s%d' % (tags.REPLICA_RESPONSE_PREFIX, i):
            tags.replica_value(*answer) for i, answer in enumerate(answers)}


def merged_listing(listings, limit):
    """The first ``limit`` rows, in name order, of the union of
    ``listings`` (each replica's page after the same marker, ``limit``
    rows at most), the newest of each name (the replicas' rows of a name
    differ where one missed an update).  A row of a replica that it did
    not put on its page sorts after its ``limit`` rows, so after the
    union's first ``limit``: the page is whole, and shorter than ``limit``
    only where no replica lists more."""
    newest = {}
    for rows in listings:
        for row in rows:
            kept = newest.get(row['name'])
            if kept is None or Timestamp.from_isoformat(
                    row['last_modified']) > Timestamp.from_isoformat(
                    kept['last_modified']):
                newest[row['name']] = row
    return [newest[name] for name in sorted(newest)[:limit]]
