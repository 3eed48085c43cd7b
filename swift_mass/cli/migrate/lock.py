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
"""The lock that lets one run of ``swift-mass migrate`` at a time move a
container: ``.mass-migrate/lock/<C>``."""
import json
import math
import os
import socket
import threading
import time

from swiftclient.exceptions import ClientException

from swift_mass.cli.migrate.decisions import (
    JOURNAL_CONTAINER, MigrationError, http_status)


class LockHeld(MigrationError):
    pass


class Lock(object):
    """One runner per container: an object created with ``If-None-Match:
    *`` that expires by itself (``X-Delete-After``), so the lock of a killed
    run frees itself after ``ttl`` seconds; a live run renews it every
    ``ttl / 3`` seconds from a thread.  A renewal reads the lock first and
    gives up the run if someone else holds it; it can only be fooled by a
    run that stalls for longer than ``ttl``."""

    def __init__(self, connect, container, ttl, wait, sleep=time.sleep,
                 clock=time.time):
        self.connect = connect
        self.name = 'lock/' + container
        self.ttl = ttl
        self.wait = wait
        self.sleep = sleep
        self.clock = clock
        self.owner = '%s:%d:%s' % (socket.gethostname(), os.getpid(),
                                   os.urandom(4).hex())
        self.lost = None
        #: why the run was stopped from outside (:meth:`stop`), or None
        self.stopped = None
        self._stop = threading.Event()
        self._thread = None

    def _put(self, conn, create):
        headers = {'X-Delete-After': str(max(1, int(math.ceil(self.ttl)))),
                   'Content-Type': 'application/json'}
        if create:
            headers['If-None-Match'] = '*'
        conn.put_object(JOURNAL_CONTAINER, self.name,
                        json.dumps({'owner': self.owner}), headers=headers)

    def holder(self, conn):
        try:
            _, body = conn.get_object(JOURNAL_CONTAINER, self.name)
        except ClientException as err:
            if http_status(err) == 404:
                return None
            raise
        return json.loads(body).get('owner')

    def acquire(self, progress):
        conn = self.connect()
        deadline = self.clock() + self.wait
        told = False
        while True:
            try:
                self._put(conn, create=True)
                break
            except ClientException as err:
                if http_status(err) != 412:
                    raise
            holder = self.holder(conn)
            if holder == self.owner:
                break  # our own PUT, retried after a lost answer
            if self.clock() >= deadline:
                raise LockHeld('another migrate run holds %s/%s (%s); it '
                               'frees itself %gs after that run stops' % (
                                   JOURNAL_CONTAINER, self.name, holder,
                                   self.ttl))
            if not told and holder is not None:
                progress('waiting for the lock held by %s (a run that '
                         'stopped frees it within %gs)' % (holder, self.ttl))
                told = True
            self.sleep(1.0)
        self._thread = threading.Thread(target=self._renew, daemon=True)
        self._thread.start()

    def _renew(self):
        conn = self.connect()
        while not self._stop.wait(self.ttl / 3.0):
            try:
                holder = self.holder(conn)
                if holder != self.owner:
                    self.lost = 'the lock is held by %s now' % holder
                    return
                self._put(conn, create=False)
            except Exception:
                # not lost yet: the lock lives ttl and is tried again
                # well before that ends
                continue

    def stop(self, why):
        """Stop the run that holds the lock at its next write, as a run
        that lost it stops (from any thread: ``swift-mass auto-migrate``
        stops a move its tenant's policy no longer asks for)."""
        self.stopped = why

    def check(self):
        if self.lost:
            raise MigrationError('lost the migration lock: %s' % self.lost)
        if self.stopped:
            raise MigrationError('stopped: %s' % self.stopped)

    def release(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        conn = self.connect()
        try:
            if self.holder(conn) == self.owner:
                conn.delete_object(JOURNAL_CONTAINER, self.name)
        except ClientException:
            pass  # it expires by itself
