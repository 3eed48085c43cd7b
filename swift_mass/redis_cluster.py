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
"""A Redis Cluster as Mass uses it (``redis+cluster://`` URLs of
:mod:`swift_mass.redis_client`): redis-py's ``RedisCluster``, made on first
use, whose commands that name no key go to the node holding the caller's
key prefix, and whose connections to a node are closed when the node
comes to hold that slot (see the classes below)."""
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import Script
from redis.crc import key_slot
from redis.event import AfterSlotsCacheRefreshEvent, EventDispatcher, \
    EventListenerInterface
from redis.exceptions import SlotNotCoveredError


class LazyRedisCluster(object):
    """A ``RedisCluster`` built at its first command (the module's
    docstring says why), whose commands that name no key go to the node
    holding the slot of ``home_key``; any other attribute is the
    cluster's.

    :param target: a Cluster URL's :class:`Target`.
    :param home_key: a key (or prefix) in the slot of the caller's keys.
    :param options: RedisCluster's keyword arguments.
    """
    _cluster = None

    def __init__(self, target, home_key, options):
        self.addresses = target.addresses
        self.options = dict(options, username=target.username,
                            password=target.password)
        self.home_key = home_key
        # Script objects encode their text with it; the cluster's is the
        # same, and this one needs no cluster built
        self.encoder = redis.connection.Encoder(
            options.get('encoding', 'utf-8'),
            options.get('encoding_errors', 'strict'),
            options.get('decode_responses', False))
        self.home_slot = key_slot(self.encoder.encode(home_key))
        #: the node the slot map named for the home slot, last time
        self.home_node_name = None

    @property
    def cluster(self):
        """The RedisCluster, built now if it is not yet."""
        if self._cluster is None:
            dispatcher = EventDispatcher()
            dispatcher.register_listeners({
                AfterSlotsCacheRefreshEvent: [_HomeNodeWatch(self)]})
            cluster = RedisCluster(
                startup_nodes=[ClusterNode(host, port)
                               for host, port in self.addresses],
                event_dispatcher=dispatcher, **self.options)
            self.home_node_name = cluster.get_node_from_key(
                self.home_key).name
            self._cluster = cluster
        return self._cluster

    def __getattr__(self, name):
        return getattr(self.cluster, name)

    def get_encoder(self):
        return self.encoder

    def register_script(self, script):
        # bound to this object, so a script's first call builds the
        # cluster, and its SCRIPT LOAD goes to the home node
        return Script(self, script)

    def home_node(self):
        """The ClusterNode the slot map names for the home slot."""
        return self.cluster.get_node_from_key(self.home_key)

    def script_load(self, script):
        # RedisCluster loads a script on every master, where the caller's
        # keys are on one: another master down must not fail the caller
        return self.cluster.execute_command('SCRIPT LOAD', script,
                                            target_nodes=self.home_node())

    def ping(self):
        # the caller's Redis is the home node (RedisCluster pings a node
        # of its choosing)
        return self.cluster.ping(target_nodes=self.home_node())

    def close(self):
        if self._cluster is not None:
            self._cluster.close()

    def home_node_changed(self):
        """The slot map was refreshed: if it names another node for the
        home slot, close the connections to that node (those in use once
        released), so that every command there goes over a connection set
        up (``connected``) while the node held the slot."""
        cluster = self._cluster
        if cluster is None:
            return  # the first map, as the cluster is built
        try:
            node = cluster.nodes_manager.get_node_from_slot(self.home_slot)
        except SlotNotCoveredError:
            return  # no node to use yet; the map that names one will
        if node.name == self.home_node_name:
            return
        self.home_node_name = node.name
        if node.redis_connection is not None:
            pool = node.redis_connection.connection_pool
            pool.update_active_connections_for_reconnect()
            pool.disconnect_free_connections()


class _HomeNodeWatch(EventListenerInterface):
    """Tells a LazyRedisCluster each time its cluster's slot map was
    refreshed."""

    def __init__(self, client):
        self.client = client

    def listen(self, event):
        self.client.home_node_changed()
