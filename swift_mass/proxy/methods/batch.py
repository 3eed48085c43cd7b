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

    def tag(self, env):
        env[tags.BATCH_ENV] = tags.BATCH

    def decide(self, env):
        return False  # nothing to answer in the proxy
