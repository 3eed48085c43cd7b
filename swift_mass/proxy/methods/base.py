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
"""What every Mass method (cache, batch, merge) offers the proxy filter.

Each request of a tenant whose policy names a method meets it in three
ways:

1. :attr:`Method.backend_tags`: once Swift authorised it, whatever the
   request, the headers the method adds for the servers further on
   (``batch`` asks ``mass_queue`` for its batch slots this way); most
   methods add none.
2. :meth:`Method.decide`: whether the method acts on the request (cheap,
   no I/O; :meth:`swift_mass.proxy.methods.Methods.app_for`).
3. :meth:`Method.wrap`, if it does: the method answers the request,
   calling the app right of Mass when it needs the backend.

A request the method does not act on goes to the app as it came (tags
aside).  Nor does a method act on a request of an account opted out of
Mass when the proxy filter learns of the opt-out only as Swift
authorises the request (the request's ``opted_out``): a method checks it
where it checks the authorisation, before it reads or stores anything.
"""

from swift.common.utils import split_path


def object_path(env):
    """``(account, container, object)`` of an object request's path (WSGI
    strings), or None if the path names no object."""
    try:
        _version, account, container, obj = split_path(
            env.get('PATH_INFO', ''), 4, 4, True)
    except ValueError:
        return None
    return account, container, obj


class Method(object):
    """One method of the policy table (an entry's ``method``)."""
    name = None
    #: environ keys of the backend headers added to every request of a
    #: tenant whose policy names this method, once Swift authorised it
    backend_tags = {}

    def decide(self, env):
        """Whether this method acts on the request; no I/O."""
        raise NotImplementedError

    def wrap(self, env, start_response, app, request):
        """Answer the request, using ``app`` (the rest of the pipeline)
        as needed; a WSGI app's return value.  ``request``: its
        :class:`~swift_mass.proxy.request.MassRequest`."""
        raise NotImplementedError


def content_length(headers):
    """The Content-Length of a response's header list, or None."""
    for name, value in headers:
        if name.lower() == 'content-length':
            try:
                return int(value)
            except ValueError:
                return None
    return None
