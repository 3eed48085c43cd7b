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
"""The leader's side of the generations (:mod:`swift_mass.generations`):
which tenants' writes the object servers bump."""
from swift_mass.lua import read_script

# The methods that read generations: the object servers bump the writes of
# the tenants the policy table gives one of them.
BUMPED_METHODS = frozenset(('cache', 'merge'))


def bumped_tenants(table):
    """The tenants of a policy table (``{tenant: entry}``, each with its
    ``method``: :class:`swift_mass.control.entry.PolicyEntry`) whose writes
    the object servers bump: those whose method reads generations."""
    return frozenset(tenant for tenant, entry in table.items()
                     if entry.method in BUMPED_METHODS)


class BumpedSetPublisher(object):
    """Publishes the bumped set through ``generations`` (a
    :class:`~swift_mass.generations.core.Generations`: the proxy's, whose
    client and keys it uses)."""

    _PUBLISH = read_script(__package__, 'publish')

    def __init__(self, generations):
        self.generations = generations
        self._publish = generations.client.register_script(self._PUBLISH)

    def publish(self, tenants):
        """Make ``tenants`` the ones whose writes the object servers bump
        (the leader, at every tick); the set's version, or None when Redis
        did not take it."""
        generations = self.generations
        try:
            return int(self._publish(
                keys=[generations.bumps_key, generations.bumps_version_key],
                args=sorted(tenants)))
        except Exception as err:
            generations.logger.warning(
                'mass generations: could not publish the tenants to bump: '
                '%s', err)
            return None
