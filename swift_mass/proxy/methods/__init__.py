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
"""The methods a tenant's policy names (its entry's ``method``), one module
each.

:class:`Methods` is what the proxy filter asks, per request, which app
answers it: the app right of Mass (most requests), or the method of the
tenant's policy when that method acts on the request
(:meth:`base.Method.decide`; a ``merge`` tenant's small PUT is written
through to the cache this way).  Once Swift authorised the request, its
:class:`~swift_mass.proxy.request.MassRequest` adds the backend tags the
method asks for (:attr:`base.Method.backend_tags`: ``batch``'s tag).
Writes need nothing from the proxy: the object servers
give each object they write a new generation
(:mod:`swift_mass.generations`).

The methods read their options from the filter's parsed configuration
(``mass_conf.cache``, ``mass_conf.merge``); they parse none themselves.
"""
import functools

from swift_mass.proxy.methods.batch import BatchMethod
from swift_mass.proxy.methods.cache import CacheMethod
from swift_mass.proxy.methods.merge import MergeMethod


class Methods(object):

    def __init__(self, app, mass_conf, logger, policy_of=None):
        """``policy_of``: a tenant's policy entry as the policy table has
        it now (the cache's counts are labeled with its class)."""
        self.cache = CacheMethod.from_conf(app, mass_conf, logger,
                                           policy_of=policy_of)
        self.merge = MergeMethod.from_conf(self.cache, mass_conf, logger)
        self.batch = BatchMethod()
        self.by_name = {method.name: method
                        for method in (self.cache, self.merge, self.batch)}

    def backend_tags(self, entry):
        """The environ's backend headers that the method of ``entry`` (a
        :class:`~swift_mass.control.entry.PolicyEntry`) asks for on every
        request of its tenant (a method this proxy does not know asks for
        none)."""
        method = self.by_name.get(entry.method)
        return {} if method is None else method.backend_tags

    def app_for(self, request, app):
        """The WSGI app that answers ``request`` (a
        :class:`~swift_mass.proxy.request.MassRequest` whose policy entry
        is not None): the method of its policy, or ``app``, the one Mass
        would call otherwise."""
        method = self.by_name.get(request.entry.method)
        if method is None or not method.decide(request.env):
            return app
        return functools.partial(method.wrap, app=app, request=request)
