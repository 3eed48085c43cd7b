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
"""Mass's work on a tenant's request that waits for Swift's authorisation.

Mass sits right of the auth middlewares and left of the proxy app, and the
proxy app is where Swift authorises a request: it calls
``env['swift.authorize']`` before the controller's handler, and handlers
that delay denial (object and container requests) call it again once they
have loaded the container's ACLs.  Whatever Mass does that costs a lookup
or leaves state (looking up an account's urgent mark, looking up whether a
container a PUT would route exists, counting the request in its tenant's
window, reading or creating an object's generation, refusing a write to a
container being moved) waits until that call said
yes, so that a request Swift refuses leaves nothing anywhere and learns
nothing: a flood of anonymous requests for made-up names creates no keys,
no lookups and no per-tenant entries.

:class:`Authorization` stands in for ``swift.authorize`` in the request's
environ, asks the auth system's own callback, and runs Mass's hooks the
first time that callback authorises the request.  A hook may answer a
response (a 503 for a container being moved); it is then the request's
denial, as an auth system's would be.  Without an auth system (no
``swift.authorize``) Swift serves every request, and the hooks run at once.
"""
from swift.common.swob import Request


def authorized(env):
    """Whether Swift's proxy would serve the request, as it authorises an
    account or container HEAD (its handler calls ``swift.authorize`` once,
    with no ACL of a container): on a copy of the environ, so that the
    check leaves nothing behind."""
    authorize = env.get('swift.authorize')
    return authorize is None or not authorize(Request(dict(env)))


class Authorization(object):
    """The authorisation of one request, with what Mass does once Swift
    authorised it."""

    def __init__(self, env):
        authorize = env.get('swift.authorize')
        if isinstance(authorize, Authorization):
            # A subrequest's environ copied from a request Mass saw (slo,
            # dlo, copy...): its hooks are that request's.
            authorize = authorize.authorize
        #: the auth system's callback, or None when there is none
        self.authorize = authorize
        self.authorized = False
        self.refusal = None
        self._hooks = []
        if authorize is not None:
            env['swift.authorize'] = self

    def after(self, hook):
        """Run ``hook()`` once the request is authorised (at once if it
        is); it answers None or a response that refuses the request."""
        if self.authorized:
            if self.refusal is None:
                self.refusal = hook()
        else:
            self._hooks.append(hook)

    def settle(self):
        """With no auth system the request is authorised as it stands: run
        the hooks; the refusal a hook answered, or None."""
        if self.authorize is None and not self.authorized:
            self._run()
        return self.refusal

    def __call__(self, req):
        denial = self.authorize(req)
        if denial:
            return denial
        if not self.authorized:
            self._run()
        return self.refusal

    def _run(self):
        self.authorized = True
        hooks, self._hooks = self._hooks, []
        for hook in hooks:
            self.refusal = hook()
            if self.refusal is not None:
                break
