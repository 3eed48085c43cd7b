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
"""``batch``: write-dominated tenants' PUTs get batch slots on the object
servers.

The method does its work on the object servers, not in the proxy: it tags
every request of the tenant ``X-Backend-Mass-Batch: true``, and
``mass_queue`` lets the PUTs so tagged use its ``batch_slots`` before they
compete for a general slot.  The tag follows the tenant's method, not its
class: a write tenant pinned to another method, or whose batch policy
validation undid, is not tagged.  The proxy answers every request as it
would without Mass.
"""
from swift_mass import tags
from swift_mass.proxy.methods import base


class BatchMethod(base.Method):
    name = 'batch'

    backend_tags = {tags.BATCH_ENV: tags.BATCH}

    def decide(self, env):
        return False  # nothing to answer in the proxy
