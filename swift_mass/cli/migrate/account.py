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
"""A tenant's account as ``swift-mass migrate`` reads it and writes its own
containers (C's staging container, the journal container) and journals."""
import contextlib
import threading

from swiftclient.exceptions import ClientException

from swift_mass import tags

from swift_mass.cli.migrate.decisions import (
    JOURNAL_CONTAINER, MARK_HEADER, RAW_QUERY, MigrationError, http_status,
    mark_value)
from swift_mass.cli.migrate.journal import Journal


def _lower(headers):
    return {k.lower(): v for k, v in headers.items()}


def _replica_answers(headers):
    """``[(status, object count, policy index)]`` of each replica, from
    the headers the mass filter answers with; None if there are none (a
    proxy without a mass filter that shows them)."""
    prefix = tags.REPLICA_RESPONSE_PREFIX.lower()
    found = sorted((int(k[len(prefix):]), v)
                   for k, v in _lower(headers).items()
                   if k.startswith(prefix))
    if not found:
        return None
    return [tags.parse_replica_value(value) for _, value in found]


class Account(object):
    """The tenant's account: ``connect()`` returns a swiftclient Connection
    on it (one per thread: they are not thread-safe).  ``lock`` is the
    :class:`~swift_mass.cli.migrate.lock.Lock` of the run under way, which
    its writes check."""

    def __init__(self, connect, delete_retries, sleep, clock):
        self.connect = connect
        self.delete_retries = delete_retries
        self.sleep = sleep
        self.clock = clock
        self._local = threading.local()
        self.lock = None

    @property
    def conn(self):
        conn = getattr(self._local, 'conn', None)
        if conn is None:
            conn = self._local.conn = self.connect()
        return conn

    @contextlib.contextmanager
    def unretried(self):
        """This thread's requests, none retried: a retried write would be
        answered as its first attempt left things (a lost 201 comes back
        202, a lost 204 404), which a probe would take for a client's
        write.  A lost answer stops the run; the next one, dating its
        writes after this one's, asks again."""
        conn = self.conn
        retries = getattr(conn, 'retries', None)
        conn.retries = 0
        try:
            yield
        finally:
            conn.retries = retries

    # --- reading ---------------------------------------------------------

    def listing(self, container):
        """Every object entry of ``container`` (swiftclient asks for it
        page by page)."""
        return self.conn.get_container(container, full_listing=True)[1]

    def head_container(self, container):
        try:
            return _lower(self.conn.head_container(container))
        except ClientException as err:
            if http_status(err) == 404:
                return None
            raise

    def head_object(self, container, name, query=RAW_QUERY, newest=False):
        """An object's headers; ``newest``: the newest replica's (the
        proxy asks every primary), not the first to answer."""
        return _lower(self.conn.head_object(
            container, name, query_string=query,
            headers={'X-Newest': 'true'} if newest else None))

    def journal(self, container):
        """The :class:`Journal` of the move of ``container``, or None."""
        try:
            _, body = self.conn.get_object(JOURNAL_CONTAINER,
                                           'journal/' + container)
        except ClientException as err:
            if http_status(err) == 404:
                return None
            raise
        return Journal.load(container, body)

    def write_journal(self, journal):
        journal.updated = self.clock()
        self.conn.put_object(JOURNAL_CONTAINER, 'journal/' + journal.container,
                             journal.dump(),
                             headers={'Content-Type': 'application/json'})
        return journal

    def journals(self):
        """The containers with a move under way."""
        if self.head_container(JOURNAL_CONTAINER) is None:
            return []
        _, entries = self.conn.get_container(JOURNAL_CONTAINER,
                                             prefix='journal/',
                                             full_listing=True)
        return [e['name'][len('journal/'):] for e in entries]

    # --- containers ------------------------------------------------------

    def own_or_absent(self, container):
        """Refuse a migration container a client made: only a reseller
        admin can mark one, and migrate makes each with its mark, so one
        without a mark is not migrate's (adopting it would copy a client's
        objects into the container, or delete them)."""
        head = self.head_container(container)
        if head is not None and not head.get(MARK_HEADER.lower()):
            raise MigrationError(
                '%s exists and was not made by swift-mass migrate (it has '
                'no mark): it is not used; delete or rename it first'
                % container)

    def check_mark(self, container, head, mark):
        """Refuse to go on unless the proxy shows the mark: only then are
        client writes refused (the mass filter runs, and these are a
        reseller admin's credentials)."""
        if (head or {}).get(MARK_HEADER.lower()) != mark:
            raise MigrationError(
                'the mark on %s did not take: the proxy does not run the '
                'mass filter, or the credentials are not a reseller '
                'admin\'s; client writes would not be refused, so nothing '
                'is moved' % container)

    def ensure_container(self, container, policy, extra=None):
        mark = mark_value(policy or '', self.clock())
        headers = {MARK_HEADER: mark}
        if policy:
            headers['X-Storage-Policy'] = policy
        headers.update(extra or {})
        try:
            self.conn.put_container(container, headers=headers)
        except ClientException as err:
            if http_status(err) != 409:  # 409: it exists in another policy
                raise
        head = self.head_container(container)
        if head is None:
            raise MigrationError('%s vanished right after it was created'
                                 % container)
        if not policy or head.get('x-storage-policy') == policy:
            # (in another policy it is not ours: the caller sees to it)
            self.check_mark(container, head, mark)
        if policy and head.get('x-storage-policy') != policy:
            return head.get('x-storage-policy')
        return policy

    def replicas(self, container):
        """``[(status, object count, policy index)]`` of each replica of
        ``container``, as its container server answers a direct HEAD (the
        mass filter asks them for a reseller admin:
        swift_mass.proxy.container_replicas); None if the proxy did not
        say (a proxy without a mass filter that shows them)."""
        return _replica_answers(self.conn.head_container(
            container, headers={tags.REPLICAS_REQUEST_HEADER: 'true'}))

    def rows_of_every_replica(self, container):
        """Every row that some replica of ``container`` lists, the newest
        of each name, in name order: the proxy's listing reads one replica
        (the first to answer), and a row that one replica still lists
        after the others dropped it is seen only by the listings that read
        that one (the mass filter's union of each replica's listing:
        swift_mass.proxy.container_replicas).  A replica that did not
        answer adds nothing."""
        headers, rows = self.conn.get_container(
            container, full_listing=True,
            headers={tags.REPLICAS_REQUEST_HEADER: 'true'})
        if _replica_answers(headers) is None:
            raise MigrationError(
                'the proxy does not show the listing of each replica of %s '
                '(its mass filter is older than this command)' % container)
        return rows

    def unsettled_replicas(self, container):
        """Why not every replica of ``container`` holds it, empty and in
        one policy, in words, or None: a replica whose listing still holds
        rows (object updates it has not had yet) refuses the container's
        DELETE while a quorum takes it, and keeps the container in its old
        policy when it is made again (Swift's proxy answers both by its
        quorum)."""
        return unsettled(container, self.replicas(container))

    def delete_container(self, container, check_lock=True,
                         every_replica=False):
        """Delete an emptied container, waiting while its object count
        catches up with the deletes (Swift answers 409 meanwhile); with
        ``every_replica``, only once every replica holds it empty (a
        container made again in another policy: :meth:`unsettled_replicas`).
        False if it lists objects, or with ``every_replica`` if one of its
        replicas counts some: the caller decides what becomes of them
        (:meth:`rows_of_every_replica`)."""
        why = None
        for attempt in range(self.delete_retries):
            if check_lock:
                self.lock.check()
            if every_replica:
                replicas = self.replicas(container)
                why = unsettled(container, replicas)
                if why is not None and any(
                        count for status, count, _ in replicas or ()
                        if status // 100 == 2):
                    return False
            if why is None:
                try:
                    self.conn.delete_container(container)
                    return True
                except ClientException as err:
                    if http_status(err) == 404:
                        return True
                    if http_status(err) != 409:
                        raise
                if self.listing(container):
                    return False
            self.sleep(min(5.0, 0.5 * (attempt + 1)))
        raise MigrationError('%s is empty but Swift still counts objects '
                             'in it (%s): run again later' % (
                                 container, why or 'its DELETE is refused'))

    def forget_journal_container(self):
        """Delete the journal container unless it holds another
        container's journal or lock.  It carries the mark, so one left
        behind refuses the tenant's own writes to it (and its deletion).
        This run's lock is released by now, so it is not checked."""
        self.delete_container(JOURNAL_CONTAINER, check_lock=False)


def unsettled(container, replicas):
    """:meth:`Account.unsettled_replicas` of ``replicas`` (as
    :meth:`Account.replicas` answers)."""
    if replicas is None:
        return ('the proxy does not show the replicas of %s (its mass '
                'filter is older than this command)' % container)
    for number, (status, count, policy) in enumerate(replicas):
        if status // 100 != 2:
            return 'replica %d of %s answered %s' % (
                number, container, status or 'nothing')
        if count:
            return 'replica %d of %s still lists %d objects' % (
                number, container, count)
        if policy != replicas[0][2]:
            return 'replica %d of %s is in policy %d, replica 0 in %d' % (
                number, container, policy, replicas[0][2])
    return None
