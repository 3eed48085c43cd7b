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
"""Marks: an operator's word on an account or a container, kept by the
proxy in its sysmeta.

``swift-mass`` sets a mark with a header on a PUT or POST of the account or
container itself (named in :mod:`swift_mass.tags`).  The ``mass`` filter
takes that header only from a reseller admin (``reseller_request``, set by
tempauth and keystoneauth before the request reaches it) and keeps it in
sysmeta, which no client can read, set or remove; anybody else's is
dropped with the forged tags.  A reseller admin's HEAD or GET of the
account or container shows the mark under the same header, so the command
can check that the mark took (no ``mass`` filter, or credentials that are
not a reseller admin's, show nothing).

Three marks:

* :data:`MIGRATING`, on a container: ``swift-mass migrate`` marks the
  containers it works on (the container, its staging container, the
  journal container) so that no client write is lost while a container
  moves to another storage policy.  A write by anyone else to a marked
  container (object PUT, POST, DELETE; container PUT, POST, DELETE) is
  answered 503 with Retry-After (``migrate_retry_after``).  The check costs
  a tenant that is not migrating nothing extra on object writes: the
  container info it reads is the one the proxy reads for the same request
  anyway (from the request's infocache or memcache).  Before it refuses, a
  worker asks the container servers, at most once a
  :data:`MOVE_RECHECK_SECONDS` per container (:class:`MovingContainers`):
  a mark the move took off is honoured within that, not once memcache
  forgets it.  Reads are never checked.  The mark's value is kept and
  shown as it was sent.  A reseller admin's object PUT, POST or DELETE
  keeps its X-Timestamp (:func:`give_back_timestamp`): the move dates its
  writes by the versions they copy, fence or delete.
* :data:`URGENT`, on an account: ``swift-mass urgent TENANT --on`` (``false``
  removes it) makes every request of the tenant carry
  ``X-Backend-Mass-Urgent: true`` to the storage servers, where
  ``mass_queue`` keeps slots for it.  It is kept as ``true`` or removed,
  and always shown, as ``true`` or ``false``.  Each proxy worker learns a
  tenant's mark from the account info Swift caches (the request's
  infocache, then memcache, then an account HEAD), at most once per
  ``urgent_recheck_seconds`` per tenant (:class:`AccountMarks`): a request
  whose tenant was looked up recently costs a dictionary lookup.  A change
  reaches every worker within ``urgent_recheck_seconds`` plus the account
  info's time in memcache (``recheck_account_existence``; the proxy that
  handles the POST clears it).
* :data:`OPT_OUT`, on an account: ``swift-mass opt-out TENANT --on``
  (``false`` removes it) opts the tenant out of Mass: its requests are
  served as without Mass (``swift_mass.proxy.middleware``).  Kept and
  shown as the urgent mark is, and learnt by each worker in the same
  lookup, once per ``urgent_recheck_seconds`` (:class:`AccountMarks`).
"""
import time

from cachetools import TTLCache
from swift.common.request_helpers import get_sys_meta_prefix
from swift.common.swob import HTTPServiceUnavailable, str_to_wsgi, \
    wsgi_quote, wsgi_to_str
from swift.common.utils import Timestamp, close_if_possible, \
    config_true_value, split_path
from swift.common.wsgi import WSGIContext, make_pre_authed_request
from swift.proxy.controllers.base import get_account_info, \
    get_container_info, headers_to_container_info

from swift_mass import metrics, tags
from swift_mass.proxy.methods import misses

WRITES = ('PUT', 'POST', 'DELETE')
# Tenants a worker remembers; beyond it, the oldest is forgotten (one more
# lookup for it).
MAX_KNOWN = 100000


class Mark(object):
    """A mark on an account or a container, kept in its sysmeta.

    :param header: the header ``swift-mass`` sends and reads, ``X-Mass-*``.
    :param level: ``'account'`` or ``'container'``: what is marked.
    """

    def __init__(self, header, level):
        self.header = header
        self.env_key = tags.environ_key(header)
        name = header[len('X-'):]
        self.sysmeta_header = get_sys_meta_prefix(level).title() + name
        self.sysmeta_env = tags.environ_key(self.sysmeta_header)
        # its key in the sysmeta of get_account_info / get_container_info
        self.sysmeta_key = name.lower()
        self._segments = {'account': 2, 'container': 3}[level]

    def addresses(self, env):
        """Whether a request is to a marked thing itself (an account, not
        one of its containers; a container, not one of its objects)."""
        try:
            split_path(env['PATH_INFO'], self._segments, self._segments)
        except ValueError:
            return False
        return True

    def take(self, env, sent):
        """Turn ``sent``, the mark's header a request came with (taken out
        of ``env`` by :func:`taken_out`), into sysmeta if a reseller admin
        sent it on a PUT or POST of the marked thing itself."""
        if sent is None or not env.get('reseller_request') or \
                env['REQUEST_METHOD'] not in ('PUT', 'POST') or \
                not self.addresses(env):
            return
        env[self.sysmeta_env] = self.stored(sent)  # '' removes it

    def shows(self, env):
        """Whether the answer to a request shows the mark: a reseller
        admin's HEAD or GET of the marked thing."""
        return bool(env.get('reseller_request')) and \
            env['REQUEST_METHOD'] in ('HEAD', 'GET') and self.addresses(env)

    def shown(self, headers):
        """A response's headers with the mark added as ``header``."""
        kept = [v for k, v in headers if k.lower() ==
                self.sysmeta_header.lower()]
        value = self.show(kept[0] if kept else None)
        if value is None:
            return headers
        return list(headers) + [(self.header, value)]

    def stored(self, sent):
        """The sysmeta value kept for a sent mark ('' removes it)."""
        return sent

    def show(self, kept):
        """The value shown for the sysmeta value ``kept`` (None when there
        is none); None shows nothing."""
        return kept


# Where gatekeeper (shunt_inbound_x_timestamp, on by default) moves every
# request's X-Timestamp, in the environ.
SHUNTED_TIMESTAMP = 'HTTP_X_BACKEND_INBOUND_X_TIMESTAMP'


def give_back_timestamp(env):
    """Give a reseller admin's object PUT, POST or DELETE back the
    X-Timestamp gatekeeper shunted, so that the proxy dates the write by
    it as it dates container sync's.  ``swift-mass migrate`` dates each
    write by the version it copies, fences or deletes, so that a client's
    later write wins on the object servers.  Only a reseller admin, who
    may delete the account's every object anyway, sets the time of a
    write."""
    if not env.get('reseller_request') or \
            env['REQUEST_METHOD'] not in ('PUT', 'POST', 'DELETE') or \
            SHUNTED_TIMESTAMP not in env:
        return
    try:
        split_path(env['PATH_INFO'], 4, 4, True)
    except ValueError:
        return  # not an object
    env['HTTP_X_TIMESTAMP'] = env.pop(SHUNTED_TIMESTAMP)


class MigratingMark(Mark):
    """A container ``swift-mass migrate`` is moving: kept as sent, shown
    when set, and writes by others refused."""

    def take(self, env, sent):
        """As :meth:`Mark.take`; and a reseller admin's object write keeps
        its X-Timestamp (:func:`give_back_timestamp`)."""
        give_back_timestamp(env)
        super(MigratingMark, self).take(env, sent)

    def on(self, info):
        """Whether container info (get_container_info's) carries the
        mark."""
        return bool(info.get('sysmeta', {}).get(self.sysmeta_key))


class FlagMark(Mark):
    """A mark on an account that is on or off (urgent, opted out): kept
    as ``true`` or removed, always shown as ``true`` or ``false``."""

    def stored(self, sent):
        return 'true' if config_true_value(sent) else ''

    def show(self, kept):
        return 'true' if config_true_value(kept) else 'false'

    def on(self, info):
        """Whether account info (get_account_info's) carries the mark."""
        return config_true_value(info.get('sysmeta', {}).get(
            self.sysmeta_key))


def staged_path(path):
    """A container's or object's WSGI path with the container replaced by
    its staging container (tags.staging_name)."""
    version, account, container, obj = split_path(path, 3, 4, True)
    parts = ['', version, account,
             str_to_wsgi(tags.staging_name(wsgi_to_str(container)))]
    return '/'.join(parts + ([obj] if obj else []))


def deleted_later(deleted, staged):
    """Whether a tombstone of the container's object (``deleted``, its
    ``X-Backend-Timestamp``, or None) is of a later version than the copy
    the staging container answered (``staged``, a WSGIContext after its
    call).  The move deletes a version with that version's timestamp and
    an offset (:func:`swift_mass.cli.migrate.decisions.stamp`), so a
    tombstone whose timestamp, offset aside, is past the staged copy's is
    a client's delete, made after the copy."""
    if not deleted or not staged._get_status_int() // 100 == 2:
        return False
    version = staged._response_header_value('x-backend-timestamp') or \
        staged._response_header_value('x-timestamp')
    if not version:
        return False
    try:
        return Timestamp(deleted).raw > Timestamp(version).raw
    except ValueError:
        return False


class StagedRead(WSGIContext):
    """A client's read of an object of a container ``swift-mass migrate``
    is moving: when the container answers 404, the object is read from the
    staging container, where the move keeps a verified copy of every
    object while the container is emptied, deleted, created again and
    restored.  So no reader gets a 404 for an object that exists.  Only
    while the container or its staging container is marked (a run that
    failed takes the mark off the container, and keeps its staging
    container for the next run); a reseller admin's reads (the move's own)
    see the container as it is.  A 404 from an unmarked container costs
    one more container info lookup (memcache), its staging container's."""

    def __call__(self, env, start_response):
        # as it came: the proxy app sets the container's storage policy
        # index in the request it serves, and the staging container's
        # policy is another
        original = dict(env)
        app_iter = self._app_call(env)
        if self._get_status_int() != 404 or not self._moving(original):
            start_response(self._response_status, self._response_headers,
                           self._response_exc_info)
            return app_iter
        not_found = (self._response_status, self._response_headers,
                     b''.join(app_iter))  # a short 404 page
        close_if_possible(app_iter)
        deleted = self._response_header_value('x-backend-timestamp')
        original['PATH_INFO'] = staged_path(original['PATH_INFO'])
        misses.without_policy_index(original)  # another container's
        staged = WSGIContext(self.app)
        staged_iter = staged._app_call(original)
        if deleted_later(deleted, staged) or \
                staged._get_status_int() in (401, 403):
            # a client deleted the object after the version staged (a
            # failed run left the container writable, or the delete went
            # through a proxy without Mass): the delete stands.  Or the
            # staging container does not grant this reader what the
            # container does (not yet: it gets the ACL just after it is
            # created, and its info is cached): the container's answer
            close_if_possible(staged_iter)
            start_response(not_found[0], not_found[1])
            return [not_found[2]]
        start_response(staged._response_status, staged._response_headers,
                       staged._response_exc_info)
        return staged_iter

    def _moving(self, env):
        info = get_container_info(env, self.app, swift_source='MASS')
        if MIGRATING.on(info):
            return True
        version, account, container, _obj = split_path(
            env['PATH_INFO'], 4, 4, True)
        staging_env = dict(env, PATH_INFO=staged_path(
            '/'.join(('', version, account, container))))
        staging = get_container_info(staging_env, self.app,
                                     swift_source='MASS')
        return MIGRATING.on(staging)

    @staticmethod
    def applies(env):
        """Whether a request of an object is a read that may fall back."""
        return env['REQUEST_METHOD'] in ('GET', 'HEAD') and \
            not env.get('reseller_request')


MIGRATING = MigratingMark(tags.MIGRATING_MARK_HEADER, 'container')
URGENT = FlagMark(tags.URGENT_MARK_HEADER, 'account')
OPT_OUT = FlagMark(tags.OPT_OUT_MARK_HEADER, 'account')
MARKS = (MIGRATING, URGENT, OPT_OUT)
# the marks on an account: one lookup of its info reads them all
ACCOUNT_MARKS = (URGENT, OPT_OUT)
NO_MARKS = frozenset()
# How long a worker trusts the container servers' word that a container is
# being moved before it asks them again (MovingContainers).
MOVE_RECHECK_SECONDS = 1.0


def taken_out(env):
    """``{mark: the header's value or None}`` of a request, the headers
    removed from ``env``: a mark is not a forged tag, but passes on only
    as the sysmeta :meth:`Mark.take` makes of it."""
    return {mark: env.pop(mark.env_key, None) for mark in MARKS}


class MovingContainers(object):
    """Refuses writes to the containers :data:`MIGRATING` marks, as far
    as this worker can tell.

    The container info Swift caches may hold a mark the move already took
    off: Swift clears its info cache before its POST reaches the container
    servers, so a read in between caches the marked info again, for
    ``recheck_container_existence`` (60 s by default), and a proxy that
    shares no memcache with the one that took the POST keeps its own.  So
    a write the cached info would refuse is refused only once a HEAD of the
    container (which refreshes Swift's cache) shows the mark too, asked at
    most once a :data:`MOVE_RECHECK_SECONDS` per container: a move that
    failed, or ended, gives the container back within about a second.
    When the container servers do not answer, the cached mark stands.

    :param app: the proxy app right of Mass (container info, HEADs).
    :param retry_after: the refusal's ``Retry-After``, in seconds.
    :param clock: a callable returning seconds.
    """

    def __init__(self, app, retry_after, clock=time.monotonic):
        self.app = app
        self.retry_after = retry_after
        self.confirmed = TTLCache(MAX_KNOWN, MOVE_RECHECK_SECONDS,
                                  timer=clock)

    def __call__(self, env):
        """None if the request may go on, else the 503 to answer: a write
        by anyone but a reseller admin to a marked container or one of its
        objects."""
        if env['REQUEST_METHOD'] not in WRITES or \
                env.get('reseller_request'):
            return None
        try:
            version, account, container, _ = split_path(
                env['PATH_INFO'], 3, 4, True)
        except ValueError:
            return None  # an account request, or not a Swift path at all
        if not MIGRATING.on(get_container_info(env, self.app,
                                               swift_source='MASS')):
            return None
        if (account, container) not in self.confirmed:
            head = make_pre_authed_request(
                env, 'HEAD', wsgi_quote('/'.join(
                    ('', version, account, container))),
                swift_source='MASS').get_response(self.app)
            if head.is_success or head.status_int == 404:
                if not MIGRATING.on(headers_to_container_info(
                        head.headers, head.status_int)):
                    return None
                self.confirmed[account, container] = True
        return HTTPServiceUnavailable(
            body=b'This container is being moved to another storage '
                 b'policy; writes are refused until the move is '
                 b'complete.\n',
            headers={'Retry-After': str(self.retry_after)},
            content_type='text/plain')


class AccountMarks(object):
    """Which marks of :data:`ACCOUNT_MARKS` each tenant's account carries,
    as far as this worker knows: one lookup of the account info tells
    them all.

    :param app: the proxy app right of Mass (account info lookups).
    :param recheck: seconds a tenant's marks are trusted before they are
        looked up again; 0 turns account marks off (no lookups at all).
    :param clock: a callable returning seconds.
    :param logger: counts each lookup (``urgent.lookup``, its name from
        when the urgent mark was the only one), if given.
    """

    def __init__(self, app, recheck, clock=time.monotonic, logger=None):
        self.app = app
        self.recheck = recheck
        self.known = TTLCache(MAX_KNOWN, recheck, timer=clock)
        self.logger = logger

    def __call__(self, env, tenant):
        """The marks (a frozenset of :data:`ACCOUNT_MARKS`) the account
        of ``tenant``, the tenant of the request ``env``, carries."""
        if not self.recheck:
            return NO_MARKS
        found = self.known.get(tenant)
        if found is not None:
            return found
        if URGENT.addresses(env) and env['REQUEST_METHOD'] in WRITES:
            # Looking up an account that is being created or changed would
            # cache its old info; its next request looks it up (and no
            # object server sees an account write's tag).
            return NO_MARKS
        if self.logger is not None:
            metrics.increment(self.logger, 'urgent.lookup', 'urgent_lookups')
        info = get_account_info(env, self.app, swift_source='MASS')
        found = self.known[tenant] = frozenset(
            mark for mark in ACCOUNT_MARKS if mark.on(info))
        return found
