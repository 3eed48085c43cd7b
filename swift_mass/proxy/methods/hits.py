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
"""A read answered from the cache
(:mod:`swift_mass.proxy.methods.cache`, "Conditional and range
requests"): the object's entry, served only while it is the object's
current version, by a swob Response built from the headers Swift sent
with the body, so conditional and range requests get the object server's
answers.
"""
from swift.common.request_helpers import resolve_etag_is_at_header
from swift.common.swob import Request, Response
from swift.common.utils import list_from_csv

from swift_mass.tags import CACHE_RESPONSE_HEADER


class Hits(object):
    """The cache's answers from its ``entries`` (an
    :class:`~swift_mass.proxy.methods.entries.Entries`).  An entry is
    served only if it is the object's current version: fetched under the
    validity read before it was looked up or, when none could be read, as
    a HEAD of the object shows (``validity_check``, a
    :class:`~swift_mass.proxy.methods.validity.ValidityCheck`); under
    ``cache_ttl_only``, while its TTL lasts.

    ``count(env, result)`` counts ``cache.<result>``.
    """

    def __init__(self, settings, entries, validity_check, count):
        self.settings = settings
        self.entries = entries
        self.validity_check = validity_check
        self.count = count

    def answer(self, env, key, validity):
        """The answer to a read of the object ``key`` from its entry (a
        swob Response), when the object's validity is ``validity``; None
        when the backend must answer."""
        entry = self.entries.get(env, key, validity)
        if entry is None:
            return None
        return self._answer(env, entry, validity)

    def _answer(self, env, entry, validity):
        """The answer from ``entry``, or None: it is stale, or Swift
        answers the request its own way."""
        ignore_range_if = env.get(
            'HTTP_X_BACKEND_IGNORE_RANGE_IF_METADATA_PRESENT')
        if ignore_range_if and any(
                entry.header(name) is not None
                for name in list_from_csv(ignore_range_if)):
            # the object server would answer differently: let it
            return None
        if not self.settings.ttl_only:
            if validity is not None:
                if entry.validity != validity:
                    self.count(env, 'stale')
                    return None
            elif not self.validity_check.backend_agrees(env, entry):
                self.count(env, 'stale')
                return None
            else:
                self.count(env, 'validated')
        resp = self._response(env, entry)
        # Swift's proxy answers a failed precondition its own way (the
        # best of every replica's 412, without the object's Content-Type
        # or Accept-Ranges, and differently for EC): let it, as it costs
        # no body.  swob decides 304 before 412, as the object server.
        if resp._get_conditional_response_status() == 412:
            return None
        self.count(env, 'hit')
        return resp

    def _response(self, env, entry):
        """The swob Response that serves ``entry`` to the request."""
        req = Request(env)
        headers = dict(entry.headers)
        etag = resolve_etag_is_at_header(req, headers)
        if 'HTTP_RANGE' in env:
            # swob cuts ranges out of a body in one piece
            resp = Response(request=req, body=entry.body, headers=headers,
                            conditional_response=True,
                            conditional_etag=etag)
        else:
            resp = Response(request=req, app_iter=list(entry.chunks),
                            headers=headers, conditional_response=True,
                            conditional_etag=etag)
            resp.content_length = entry.length
        resp.headers[CACHE_RESPONSE_HEADER] = 'hit'
        return resp
