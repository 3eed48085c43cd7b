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
"""The generation bumps of ``mass_queue``
(:class:`swift_mass.obj.middleware.MassQueueMiddleware`, "Generations"):
which requests are object writes that get a new generation
(:func:`is_bumped`), what a write's answer says it wrote (:func:`written`),
and the write answered only once its object got a new generation
(:class:`BumpedWrite`).
"""
from swift.common.wsgi import WSGIContext

# Writes that change what a GET of the object answers.
WRITE_METHODS = ('PUT', 'POST', 'DELETE')

# What an object write's answer says it wrote (:func:`written`).
NOTHING = 'nothing'
MAYBE = 'maybe'
SURELY = 'surely'


def is_bumped(method, replication, keeps_version=False):
    """Whether a request to an object is a write whose object gets a new
    generation: a PUT, POST or DELETE not sent by replication (which moves
    versions that were written already) nor by a move that keeps the
    version (docs/cache.md, "A move keeps cached bodies").

    :param replication: the request is tagged ``X-Backend-Replication:
        true``
    :param keeps_version: the request is tagged
        ``X-Backend-Mass-Keeps-Version: true`` (only the proxies' ``mass``
        sets it, on a reseller admin's write of ``swift-mass migrate``)
    """
    return method in WRITE_METHODS and not replication and \
        not keeps_version


def written(method, status):
    """What a write (``method``) answered ``status`` wrote: NOTHING,
    MAYBE (in part, or all of it) or SURELY.

    :param status: its status code; None when the object server raised
    """
    # A refused write changed nothing, but a DELETE's 404 left a
    # tombstone; an error may have written part of it.
    if status is None or status >= 500:
        return MAYBE
    if status < 400 or (status == 404 and method == 'DELETE'):
        return SURELY
    return NOTHING


class BumpedWrite(WSGIContext):
    """An object write, answered only after the object got a new
    generation (swift_mass.generations): the object server has written it
    by the time it answers."""

    def __init__(self, app, generations, logger):
        super(BumpedWrite, self).__init__(app)
        self.generations = generations
        self.logger = logger

    def __call__(self, env, start_response, key, tenant):
        status = None
        try:
            app_iter = self._app_call(env)
            status = self._get_status_int()
        finally:
            # Decided once written: a tenant that entered the bumped set
            # while this write ran is bumped (no proxy trusts it before
            # this process registered the set).
            if self.generations.bumps_writes_of(tenant):
                self._bump(env, key, tenant, status)
        start_response(self._response_status, self._response_headers,
                       self._response_exc_info)
        return app_iter

    def _bump(self, env, key, tenant, status):
        # Bump what may have been written, and record the timestamp only
        # of what surely was.
        what = written(env['REQUEST_METHOD'], status)
        if what == NOTHING:
            return
        hold = self.generations.holds_unrecorded(tenant)
        if what == MAYBE:
            self.generations.bump([key], hold=hold)
        else:
            self.generations.bump(
                [key], env.get('HTTP_X_TIMESTAMP'), hold=hold,
                data=env['REQUEST_METHOD'] != 'POST')
