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
"""What an object's primary replicas hold, asked of each object server
directly (runs in the proxy): the proof a cache fill needs when no fence
sealed in the reader's era vouches for one replica (docs/cache.md, "Why
no fill is older than an acknowledged write").

Swift's newest read (X-Newest) cannot give it.  It orders the replicas'
answers by their data's time alone (``GetterSource.timestamp``) and, among
replicas with the same data, keeps the last to answer: a replica that
missed a POST is often that one (it is slow; that is why it missed the
POST), and its older metadata wins.  A HEAD of each primary shows every
replica's metadata time and data time; the newest of each is what a
version must have to be the current one.
"""
import collections

from eventlet import GreenPile
from eventlet.timeout import Timeout

from swift.common.direct_client import direct_head_object
from swift.common.exceptions import ClientException
from swift.common.storage_policy import POLICIES
from swift.common.swob import wsgi_to_str
from swift.common.utils import Timestamp
from swift.proxy.controllers.base import get_container_info

from swift_mass.proxy.methods import base


class Version(collections.namedtuple('Version', 'timestamp data')):
    """The newest metadata time (``timestamp``: a POST's, a PUT's or a
    tombstone's) and data time (``data``, None if no replica holds data)
    among an object's replicas, as Timestamps."""
    __slots__ = ()

    def shown_by(self, timestamp, data_timestamp):
        """Whether a version whose metadata and data have these times
        (X-Backend-Timestamp, X-Backend-Data-Timestamp) is this newest one.
        By time alone (``raw``), as
        :meth:`~swift_mass.generations.reader.Written.covers` compares:
        what Swift's and Mass's own processes write again of a version
        keeps its time and differs by its offset only."""
        try:
            shown = Timestamp(timestamp)
            shown_data = Timestamp(data_timestamp or timestamp)
        except (TypeError, ValueError):
            return False
        return self.data is not None and \
            shown.raw >= self.timestamp.raw and \
            shown_data.raw >= self.data.raw


def newest_of(answers):
    """The :class:`Version` the answers ``[(status, headers)]`` of every
    primary show, or None if one of them did not answer 200 or 404 (the
    write it may hold is unknown)."""
    timestamp = data = None
    for status, headers in answers:
        if status not in (200, 404):
            return None
        try:
            shown = Timestamp(headers.get('X-Backend-Timestamp') or 0)
            shown_data = Timestamp(
                headers.get('X-Backend-Data-Timestamp') or shown)
        except ValueError:
            return None
        # a 404's X-Backend-Timestamp is its tombstone's (none: the replica
        # holds nothing of the object)
        if timestamp is None or shown.raw > timestamp.raw:
            timestamp = shown
        if status == 200 and (data is None or shown_data.raw > data.raw):
            data = shown_data
    if timestamp is None:
        return None
    return Version(timestamp, data)


def ask_each(request, nodes, path, conn_timeout, node_timeout, log,
             headers=None, method='HEAD'):
    """``[(status, answer)]`` of a direct request (``request``, a
    swift.common.direct_client function, or a partial of one) of ``path``
    (its arguments after the node: partition, account...) on each node,
    sent in parallel with the proxy server's timeouts: 200 and what
    ``request`` returned, or the error's status and headers; status 0 and
    no headers where one did not answer, which ``log`` (a logger's method)
    tells, naming ``method``."""
    def ask(node):
        try:
            kwargs = {} if headers is None else {'headers': dict(headers)}
            return 200, request(node, *path, conn_timeout=conn_timeout,
                                response_timeout=node_timeout, **kwargs)
        except ClientException as err:
            return err.http_status or 0, err.http_headers or {}
        except (Exception, Timeout) as err:
            log('mass: %s of %s on %s:%s failed: %s', method,
                '/'.join(str(p) for p in path[1:]), node.get('ip'),
                node.get('port'), err)
            return 0, {}
    pile = GreenPile(len(nodes))
    for node in nodes:
        pile.spawn(ask, node)
    return list(pile)


class Replicas(object):
    """The answers of an object's primaries to a HEAD each, sent in
    parallel with the proxy server's own timeouts (``conn_timeout``,
    ``node_timeout``), and the newest version they show (:meth:`newest`).

    ``app``: the pipeline right of Mass (container info, and the proxy
    server's rings and timeouts); ``swift_dir`` where the rings are when
    the proxy server is not found at its end."""

    def __init__(self, app, swift_dir, logger, head=direct_head_object):
        self.app = app
        self.swift_dir = swift_dir
        self.logger = logger
        self.head = head
        # the proxy server app, which Swift's pipeline names on each app
        proxy = getattr(app, '_pipeline_final_app', app)
        self.conn_timeout = getattr(proxy, 'conn_timeout', 0.5)
        self.node_timeout = getattr(proxy, 'node_timeout', 10.0)
        self._object_ring = getattr(proxy, 'get_object_ring', None)

    def object_ring(self, policy_index):
        if self._object_ring is not None:
            return self._object_ring(policy_index)
        return POLICIES.get_object_ring(policy_index, self.swift_dir)

    def answers(self, env):
        """``[(status, headers)]`` of each primary of the object ``env``
        reads, or None if they cannot be asked (no container info, no
        ring)."""
        path = base.object_path(env)
        if path is None:
            return None
        info = get_container_info(dict(env), self.app, swift_source='MASS')
        if info.get('status') != 200 and info.get('status') != 204:
            return None
        try:
            policy_index = int(info.get('storage_policy') or 0)
            ring = self.object_ring(policy_index)
            account, container, obj = (wsgi_to_str(p) for p in path)
            part, nodes = ring.get_nodes(account, container, obj)
        except Exception as err:
            self.logger.warning('mass cache: no object ring for %s: %s',
                                env.get('PATH_INFO'), err)
            return None
        headers = {'X-Backend-Storage-Policy-Index': str(policy_index),
                   'User-Agent': 'Swift Mass',
                   'X-Trans-Id': env.get('swift.trans_id', '')}
        return ask_each(self.head, nodes, (part, account, container, obj),
                        self.conn_timeout, self.node_timeout,
                        self.logger.debug, headers)

    def newest(self, env):
        """The :class:`Version` the primaries of the object ``env`` reads
        hold now, or None if one of them could not tell."""
        answers = self.answers(env)
        return None if answers is None else newest_of(answers)
