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
"""The durable copy of each tenant's policy: its account's sysmeta.

The control loop (:mod:`swift_mass.control.agent`) saves every decision
here and recalls it when the shared store has lost the policy table, so a
decision survives the loss of Redis and reloads.
"""
import json
import time

from cachetools import TTLCache
from swift.common.swob import Request, wsgi_quote
from swift.common.utils import config_true_value

SYSMETA_POLICY = 'X-Account-Sysmeta-Mass-Policy'
# Tenants remembered without a policy; beyond it, the oldest is forgotten
# (one more HEAD for it).
MAX_ABSENT = 100000


class AccountSysmeta(object):
    """The policy of a tenant in ``X-Account-Sysmeta-Mass-Policy``, read
    and written by the proxy app right of Mass (no auth there).

    :param negative_ttl: seconds a tenant found without a policy is not
        asked again.
    """

    def __init__(self, app, logger, negative_ttl=60.0, clock=time.time):
        self.app = app
        self.logger = logger
        self.cache = None        # swift.cache, from the first request
        self._absent = TTLCache(MAX_ABSENT, negative_ttl, timer=clock)

    def _request(self, method, tenant, headers=None):
        env = {'REQUEST_METHOD': method, 'swift.source': 'MASS',
               'HTTP_USER_AGENT': 'Swift Mass'}
        if self.cache is not None:
            env['swift.cache'] = self.cache
        # quoted: Request.blank unquotes (a tenant named AUTH_x%62 is not
        # AUTH_xb, nor is AUTH_a?b AUTH_a with a query string)
        req = Request.blank(wsgi_quote('/v1/' + tenant), environ=env,
                            headers=headers)
        try:
            return req.get_response(self.app)
        finally:
            # The proxy app tags this green thread's log lines with the
            # subrequest's transaction id; the control loop's decisions,
            # logged next, belong to no transaction.
            self.logger.txn_id = None

    def load(self, tenant):
        """The tenant's saved policy entry, or None."""
        if tenant in self._absent:
            return None
        try:
            resp = self._request('HEAD', tenant)
            value = resp.headers.get(SYSMETA_POLICY) \
                if resp.is_success else None
            entry = json.loads(value) if value else None
        except Exception as err:
            self.logger.warning('mass: cannot read the policy of %s from '
                                'account sysmeta: %s', tenant, err)
            return None
        if entry is None:
            self._absent[tenant] = True
        return entry

    def known(self, tenants):
        """Tenants some leader has decided for (they are in the table this
        worker loaded): whatever this worker learnt of their absence is
        out of date, and a later recall must read their sysmeta again."""
        for tenant in tenants:
            self._absent.pop(tenant, None)

    def save(self, tenant, entry):
        """Save the tenant's entry (None removes it); never raises."""
        value = json.dumps(entry, sort_keys=True) if entry else ''
        try:
            # With account_autocreate a POST would create a missing
            # account, which Swift would not have done for this tenant.
            head = self._request('HEAD', tenant)
            if not head.is_success or config_true_value(head.headers.get(
                    'X-Backend-Fake-Account-Listing')):
                return
            resp = self._request('POST', tenant, {SYSMETA_POLICY: value})
            if not resp.is_success:
                raise Exception(resp.status)
        except Exception as err:
            self.logger.warning('mass: cannot save the policy of %s in '
                                'account sysmeta: %s', tenant, err)
        else:
            self._absent.pop(tenant, None)
