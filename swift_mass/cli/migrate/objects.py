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
"""The object writes of a run of ``swift-mass migrate``: server-side copies,
fences, deletes and probes, each dated by the version it copies, fences,
deletes or probes (:func:`~swift_mass.cli.migrate.decisions.stamp`)."""
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from swift.common.utils import Timestamp
from swiftclient.exceptions import ClientException

from swift_mass.cli.migrate.decisions import (
    ABSENT, CHANGED, COPIED, COPY, DELETE, DELETED, FENCE, GONE, KEEPS_VERSION,
    KINDS, NEWER, PASSES, PROBE, PROBE_TYPE, RESTORE, UNFENCE, MigrationError,
    copy_query, fence_delete_at, fence_headers, fingerprint, http_status,
    in_copy_order, is_fenced, is_ours, kind_of, listed_version, listing_kind,
    mismatches, stamp)


class ObjectMover(object):
    """Copies and deletes objects of ``account``, each write dated from
    ``base``, the run's offsets base, and made only while the run holds its
    lock: one at a time, or a listing's worth with ``workers`` threads,
    telling ``progress`` how far they got."""

    def __init__(self, account, progress, workers, base):
        self.account = account
        self.progress = progress
        self.workers = workers
        self.base = base
        #: the X-Delete-At of this run's fences
        self.fence = fence_delete_at(base)

    def copy_object(self, source, dest, name, role=COPY):
        """Copy one object server side, dated by its version, and verify
        the copy: ``(outcome, the source's version)``.  COPIED; GONE, the
        source is (deleted, or expired meanwhile); NEWER, ``dest`` holds a
        client's later write or tombstone, which Swift keeps.  Into a
        staging container, where only the move writes, a later write is
        an error: a proxy that does not keep the move's X-Timestamp."""
        for attempt in range(PASSES):
            try:
                raw = self.account.head_object(source, name)
                kind = kind_of(raw)
                plain = self.account.head_object(source, name, None) \
                    if kind == 'slo' else None
            except ClientException as err:
                if http_status(err) == 404:
                    return GONE, None
                raise
            version = raw['x-timestamp']
            if raw.get('x-delete-at') == str(self.fence):
                # The replica read holds this run's own fence (no client
                # sets its X-Delete-At): the staged copy's metadata, sent
                # by this run, on the version it staged.  Nothing to copy,
                # and a copy would stage the fence.
                return COPIED, version
            path = urllib.parse.quote('/%s/%s' % (source, name))
            self.account.lock.check()
            try:
                self.account.conn.put_object(
                    dest, name, b'', content_length=0,
                    headers=dict(
                        {'X-Copy-From': path,
                         'X-Timestamp': stamp(version, self.base, role)},
                        **(KEEPS_VERSION if role == RESTORE else {})),
                    query_string=copy_query(kind))
                break
            except ClientException as err:
                # The copy found no source: a client deleted it since the
                # HEAD, or the HEAD was answered by a replica that missed
                # the delete.  Not copied in this pass: the next pass
                # lists the object again if it is still there.
                if http_status(err) == 404:
                    return GONE, None
                # Swift's copy reads the source X-Newest; a DELETE that
                # lands between its reads of the replicas gets it a 200
                # with no body and the deleted version's ETag, and so the
                # PUT a 422: the copy is made again, from the HEAD.
                if http_status(err) != 422 or attempt == PASSES - 1:
                    raise
        # whatever the PUT was answered (a retried one is 202), the copy
        # is what the object servers keep now
        outcome = self._check_copy(source, dest, name, version, kind,
                                   fingerprint(raw, plain))
        if outcome == NEWER and is_ours(dest):
            raise MigrationError(
                '%s/%s is dated after its source: the proxy does not keep '
                'a reseller admin\'s X-Timestamp (its mass filter gives it '
                'back since swift-mass migrate dates its copies), or a '
                'client wrote to %s: the move stops' % (dest, name, dest))
        return outcome, version

    def _check_copy(self, source, dest, name, version, kind, found):
        try:
            copy_raw = self.account.head_object(dest, name)
        except ClientException as err:
            if http_status(err) == 404:
                return NEWER  # a client's tombstone
            raise
        if Timestamp(copy_raw['x-timestamp']) > Timestamp(version):
            return NEWER
        copy_plain = self.account.head_object(dest, name, None) \
            if kind == 'slo' else None
        wrong = mismatches(found, fingerprint(copy_raw, copy_plain))
        if wrong:
            raise MigrationError('the copy of %s/%s in %s differs in %s' % (
                source, name, dest, ', '.join(wrong)))
        return COPIED

    def delete_object(self, container, name, version, role=DELETE,
                      fence=None):
        """Delete ``version`` of an object: DELETED; ABSENT (nothing to
        delete, or a later tombstone); NEWER (a later version, kept);
        CHANGED (``fence``, the X-Delete-At of this run's fence, is gone:
        a client's POST replaced it)."""
        headers = {'X-Timestamp': stamp(version, self.base, role)}
        if fence is not None:
            headers['X-If-Delete-At'] = str(fence)
            # deletes only the fenced version, whose copy the staging
            # container holds
            headers.update(KEEPS_VERSION)
        self.account.lock.check()
        try:
            self.account.conn.delete_object(container, name, headers=headers)
        except ClientException as err:
            if http_status(err) == 404:
                return ABSENT
            if http_status(err) == 409:
                return NEWER
            if http_status(err) == 412 and fence is not None:
                return CHANGED
            raise
        return DELETED

    def delete_unchanged(self, container, staging, name, version,
                         fenced_before=False):
        """Delete ``version`` of an object of C, whose copy ``staging``
        holds, unless a client changed it since: CHANGED.  A client's POST
        (through a proxy without the filter) changes only the metadata,
        which Swift's DELETE does not compare (it compares data times):
        deleted, the POST would be lost with C's old policy.  So the
        object is fenced first: this run's POST, dated by ``version``
        (plus the FENCE offset), sends the staged copy's metadata again
        and sets an X-Delete-At of the run's own, and the DELETE names it
        (``X-If-Delete-At``).  On each object server a client's write
        (dated after ``version``) either came first (the fence is older:
        409, or 404 after a DELETE), or between (it replaced the
        X-Delete-At: the DELETE's 412, or 409 for a PUT), or after (the
        object is gone: its 404).  A write is acknowledged only where a
        majority did not answer 404, so then the fence or the DELETE is
        refused by a majority too, and the move reads the object again.
        The fence alone finds every later write: no read of C's newest
        replica is needed first.

        ``fenced_before``: this run sent the fence before (its answer
        CHANGED, or lost: swiftclient sends a POST whose answer it lost
        again, and the replicas the first attempt reached refuse the
        retry), so a 409 may be the replicas that hold it: the DELETE,
        which deletes only where this run's fence is, is sent all the
        same, and tells them from a client's write."""
        try:
            staged = self.account.head_object(staging, name)
        except ClientException as err:
            if http_status(err) == 404:
                raise MigrationError('%s/%s: its copy in %s is missing: '
                                     'nothing is deleted without it' % (
                                         container, name, staging))
            raise
        headers = fence_headers(staged, self.fence)
        headers['X-Timestamp'] = stamp(version, self.base, FENCE)
        headers.update(KEEPS_VERSION)
        refused = self._post(container, name, headers)
        if refused == ABSENT or (refused and not fenced_before):
            return refused
        return self.delete_object(container, name, version,
                                  fence=self.fence)

    def unfence(self, container, staging, name):
        """Take a killed run's fence off an object of C, as its staged copy
        shows the metadata (a run that stops between its fence and its
        DELETE leaves the object with the fence's X-Delete-At, which
        ``migrate abort`` must not give back): True if there was one."""
        try:
            current = self.account.head_object(container, name, newest=True)
            staged = self.account.head_object(staging, name)
        except ClientException as err:
            if http_status(err) == 404:
                return False
            raise
        if not is_fenced(current, staged):
            return False
        headers = fence_headers(staged, staged.get('x-delete-at'))
        headers['X-Timestamp'] = stamp(current['x-timestamp'], self.base,
                                       UNFENCE)
        headers.update(KEEPS_VERSION)
        # a client's later write (409) keeps its own metadata
        return self._post(container, name, headers) is None

    def _post(self, container, name, headers):
        """Make an object POST of the move: None, or why not: ABSENT, or
        CHANGED (a later write, 409)."""
        self.account.lock.check()
        try:
            self.account.conn.post_object(container, name, headers=headers)
        except ClientException as err:
            if http_status(err) == 404:
                return ABSENT
            if http_status(err) == 409:
                return CHANGED
            # Swift's symlink filter answers a POST to a symlink with a
            # redirect to its target, once the object servers took it
            if http_status(err) != 307:
                raise
        return None

    def probe(self, container, staging, name):
        """PUT a probe in C dated after the staged version of ``name``:
        ``(COPIED or NEWER, the staged version)``, or ``(GONE, None)``."""
        try:
            version = self.account.head_object(staging, name).get(
                'x-timestamp')
        except ClientException as err:
            if http_status(err) == 404:
                return GONE, None
            raise
        self.account.lock.check()
        answer = {}
        # expired as it lands (Swift checks X-Delete-At against the write's
        # time): a reader gets a 404 and the staged copy, never the probe
        self.account.conn.put_object(
            container, name, b'', content_length=0,
            headers={'Content-Type': PROBE_TYPE,
                     'X-Timestamp': stamp(version, self.base, PROBE),
                     'X-Delete-At': str(int(float(version)) + 1)},
            response_dict=answer)
        return (NEWER if answer.get('status') == 202 else COPIED), version

    def parallel(self, work, entries, what):
        """``{name: work(name)}`` for every entry."""
        done = [0]
        report = max(1, min(100, len(entries) // 20))
        guard = threading.Lock()

        def one(entry):
            result = work(entry['name'])
            with guard:
                done[0] += 1
                if done[0] % report == 0 or done[0] == len(entries):
                    self.progress('%s %d/%d' % (what, done[0], len(entries)))
            return entry['name'], result

        # kinds go one after the other: a manifest's segments and a
        # symlink's target must be in place before it is copied
        results = {}
        for kind in KINDS:
            batch = [e for e in entries if listing_kind(e) == kind]
            if not batch:
                continue
            with ThreadPoolExecutor(self.workers) as pool:
                results.update(pool.map(one, batch))
        return results

    def copy_passes(self, source, dest, todo_now, what, still, summary,
                    counted, later=None, role=COPY):
        """Copy what ``todo_now()`` lists from source to dest until it
        lists nothing, at most PASSES times, adding each pass's copies to
        ``summary[counted]`` and the names that lost to a client's later
        write to ``later``.  ``still(left)``: the error's start, given the
        number of objects left; ``role``: the copies' offset."""
        for attempt in range(PASSES + 1):
            todo = todo_now()
            if not todo:
                return
            if attempt == PASSES:
                raise MigrationError(
                    '%s after %d passes (an object listed but unreadable, '
                    'e.g. expired, leaves the listing when the object '
                    'expirer runs): run again later' % (
                        still(len(todo)), PASSES))
            self.copy_listed(source, dest, todo, what, summary, counted,
                             later, role)

    def copy_listed(self, source, dest, todo, what, summary, counted,
                    later=None, role=COPY):
        """Copy the listing entries ``todo`` once: :meth:`copy_passes`'s
        pass, unverified."""
        copies = self.copy_all(source, dest, in_copy_order(todo), what, role)
        for name, (outcome, _version) in copies.items():
            if outcome == COPIED:
                summary[counted] += 1
            elif outcome == NEWER:
                later.add(name)

    def copy_all(self, source, dest, entries, what, role=COPY):
        return self.parallel(lambda name: self.copy_object(
            source, dest, name, role), entries, '%s: %s' % (source, what))

    def delete_all(self, container, entries, what):
        """Delete the listed versions of ``entries``; how many went."""
        versions = {e['name']: listed_version(e) for e in entries}
        deletes = self.parallel(lambda name: self.delete_object(
            container, name, versions[name]), entries,
            '%s: %s' % (container, what))
        return sum(1 for result in deletes.values() if result == DELETED)
