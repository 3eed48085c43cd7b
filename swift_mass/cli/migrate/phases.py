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
"""The four phases of a move (:data:`.decisions.PHASES`), each run by
``run(journal, summary)``; each ends by journaling the next."""
from swift.common.utils import Timestamp
from swiftclient.exceptions import ClientException

from swift_mass.cli.migrate.decisions import (
    ABSENT, CHANGED, COPIED, DELETE, DELETED, GONE, JOURNAL_CONTAINER,
    MARK_HEADER, NEWER, PASSES, RESTORE, UNPROBE, UPDATES_WAIT,
    VERSIONING_HEADERS, Deletion, MigrationError, container_step,
    empty_action, http_status, in_copy_order, index, is_probe,
    listed_version, not_in, restore_action, saved_headers, staged_headers,
    written_since)

# seconds between two looks at a listing that still shows objects deleted
UPDATES_POLL = 5.0


class Phase(object):
    """What the phases share: ``account``, ``objects`` (an
    :class:`~swift_mass.cli.migrate.objects.ObjectMover`) and ``progress``,
    and the marks and headers of C and S."""

    def __init__(self, account, objects, progress):
        self.account = account
        self.objects = objects
        self.progress = progress

    def next_phase(self, journal, phase):
        journal.phase = phase
        self.account.write_journal(journal)

    def mark(self, journal):
        """Mark C (again); True if it was not marked: a run that failed
        took the mark off, or C was created again."""
        head = self.account.head_container(journal.container)
        if (head or {}).get(MARK_HEADER.lower()) == journal.mark:
            return False
        self.account.conn.post_container(journal.container,
                                         {MARK_HEADER: journal.mark})
        self.account.check_mark(
            journal.container,
            self.account.head_container(journal.container), journal.mark)
        return True

    def take_headers(self, journal, kept=()):
        """Save C's headers as they are now for its successor: a client
        may have changed them (before the mark took, through a proxy
        without the filter, or after a failed run), and a read ACL revoked
        must stay revoked.  ``kept``: those the move took off C itself,
        kept as saved.  The staging container follows."""
        head = self.account.head_container(journal.container) or {}
        saved = saved_headers(head)
        saved.update((key, value) for key, value in journal.saved.items()
                     if key in kept)
        if saved != journal.saved:
            journal.saved = saved
            self.account.write_journal(journal)
        self.stage_headers(journal)

    def stage_headers(self, journal):
        """Give S the read ACL and the CORS metadata of C, and take off
        those C lost: readers of C read from S what C lacks meanwhile
        (marks.StagedRead), and S must grant them what C does."""
        head = self.account.head_container(journal.staging) or {}
        wanted = staged_headers(journal.saved)
        change = {key: wanted.get(key, '')
                  for key in set(wanted) | set(staged_headers(head))
                  if wanted.get(key, '') != head.get(key, '')}
        if change:
            self.account.conn.post_container(journal.staging, change)


class CopyPhase(Phase):
    """copy C -> S: every object copied server side, each copy verified,
    once ``settle`` seconds have passed since C was marked."""

    def __init__(self, account, objects, progress, settle):
        super(CopyPhase, self).__init__(account, objects, progress)
        self.settle = settle

    def run(self, journal, summary):
        container, staging = journal.container, journal.staging
        self.account.own_or_absent(staging)
        marked_at = self.account.clock() if self.mark(journal) else \
            journal.marked_at
        got = self.account.ensure_container(staging, journal.target)
        if got != journal.target:
            raise MigrationError(
                'staging container %s exists in policy %s, not %s: it is '
                'not this migration\'s' % (staging, got, journal.target))
        self.take_headers(journal)

        def differing():
            return not_in(self.account.listing(container),
                          index(self.account.listing(staging)))
        # Writes admitted before the mark reached every proxy (container
        # info is cached) or still uploading must land before the final
        # listing below, or they would be copied only by the empty phase.
        # Only that listing waits for them: what C holds now is copied
        # meanwhile (a move started by auto-migrate copied nothing for
        # the first 60 s of its tenant's new workload), and the passes
        # after the wait copy what changed.
        if marked_at + self.settle > self.account.clock():
            self.objects.copy_listed(container, staging, differing(),
                                     'copy', summary, 'copied')
        wait = marked_at + self.settle - self.account.clock()
        if wait > 0:
            self.progress('%s: waiting %ds for writes in flight' % (
                container, wait))
            self.account.sleep(wait)
        self.objects.copy_passes(
            container, staging, differing,
            'copy', lambda left: '%s: %d objects still differ in %s' % (
                container, left, staging), summary, 'copied')
        # S holds a verified copy of every object of C: from here on S is
        # the reference and C may be emptied
        self.next_phase(journal, 'empty')


class EmptyPhase(Phase):
    """empty C: every object deleted, then C, then C created again in the
    target policy."""

    def __init__(self, account, objects, progress,
                 updates_wait=UPDATES_WAIT):
        super(EmptyPhase, self).__init__(account, objects, progress)
        self.updates_wait = updates_wait
        # {name: Deletion} of the objects of C this run deleted itself
        # (EmptyPhase._settle)
        self.emptied = {}

    def run(self, journal, summary):
        # a run runs each phase once at most: this is the run's start
        self.emptied = {}
        container = journal.container
        why = None
        for attempt in range(5):
            head = self.account.head_container(container)
            step = container_step(
                'empty', head and head.get('x-storage-policy'),
                journal.source_policy, journal.target)
            if step == 'restore':
                break
            if step == 'empty':
                self._empty(journal, summary)
                if not self._delete_emptied(journal, summary):
                    why = 'objects keep arriving in it'
                    continue  # empty it again
            self.progress('%s: creating it again in %s' % (
                container, journal.target))
            self.account.ensure_container(container, journal.target,
                                          journal.saved)
            why = 'clients keep creating it again in another policy'
        else:
            raise MigrationError('%s: %s' % (container, why))
        # every replica deleted it first (Account.delete_container), so
        # every one took the PUT; one that did not would keep the old
        # policy, and the proxies whose lookups reach it would write and
        # read the objects there.  Checked again by the next run, which
        # finds the move in this phase.
        why = self.account.unsettled_replicas(container)
        if why is not None:
            raise MigrationError(
                '%s was made again in %s, but %s: Swift\'s replicators must '
                'bring its replicas together before the move goes on; run '
                'again later' % (container, journal.target, why))
        self.next_phase(journal, 'restore')

    def _delete_emptied(self, journal, summary):
        """Delete C, emptied: True, or False if one of its replicas lists
        objects written since (to be emptied again).  A row of an object
        this run deleted is a container replica that missed the delete:
        the object replica that should have told it refused the DELETE (it
        took the fence after it: 412) while a quorum took it, or its update
        timed out.  Such an object is settled again (:meth:`_settle`): its
        probe, dated after this run's DELETE, reaches every object replica,
        and the probe's removal every container replica.  Every replica's
        rows are read (:meth:`.Account.rows_of_every_replica`), so that one
        round settles them all: the proxy's listing reads one replica.  A
        row of a probe's removal is an update that waits in an async
        pending, for Swift's object-updater.  Waited for up to
        ``updates_wait`` seconds, rather than emptying C again."""
        container = journal.container
        deadline = self.account.clock() + self.updates_wait
        shown = None
        while not self.account.delete_container(container,
                                                every_replica=True):
            rows = self.account.rows_of_every_replica(container)
            if written_since(rows, self.emptied):
                return False
            if self.account.clock() >= deadline:
                raise MigrationError(
                    '%s: %d objects this move deleted are still listed '
                    '(%s): their container updates wait in async pendings '
                    'on the object servers, for Swift\'s object-updater; '
                    'run again later' % (
                        container, len(rows),
                        ', '.join(e['name'] for e in rows[:5])) if rows else
                    '%s: a replica still counts objects but lists none: '
                    'Swift\'s replicators must bring its replicas '
                    'together; run again later' % container)
            missed = [e for e in rows
                      if self.emptied[e['name']].role == DELETE]
            if missed:
                self.progress('%s: %d objects deleted are still listed: '
                              'settling them again' % (container,
                                                       len(missed)))
                for entry in missed:
                    del self.emptied[entry['name']]
                self._settle_all(container, journal.staging, missed, summary)
            elif len(rows) != shown:
                shown = len(rows)
                self.progress('%s: waiting for the container updates of '
                              '%d objects deleted' % (container, shown))
            self.account.sleep(UPDATES_POLL)
        return True

    def _empty(self, journal, summary):
        container, staging = journal.container, journal.staging
        versioning = [h for h in VERSIONING_HEADERS if h in journal.saved]
        if versioning:
            self.account.conn.post_container(container, {
                'X-Remove-' + h[2:]: 'x' for h in versioning})
        self.mark(journal)
        self.take_headers(journal, kept=VERSIONING_HEADERS)
        staged = {e['name']: e for e in self.account.listing(staging)}
        entries = self.account.listing(container)
        listed = index(entries)
        # what C no longer lists or lists as a probe: deleted by a client
        # (through a proxy without the filter), by its expiry or by this
        # move in a run that was killed, or probed by that run
        unsure = [entry for name, entry in staged.items()
                  if name not in self.emptied and
                  (name not in listed or is_probe(listed[name]))]
        self._settle_all(container, staging, unsure, summary)
        settled = set(e['name'] for e in unsure)
        # emptied again: a row of this run's own delete (a probe's
        # included) is a replica behind, not an object to copy or delete
        entries = written_since([e for e in entries
                                 if e['name'] not in settled], self.emptied)
        versions = {name: listed_version(e) for name, e in staged.items()}
        late = [e for e in entries
                if empty_action(e, index(staged.values())) == 'copy']
        if late:
            self.progress('%s: %d objects written late; copying them to %s'
                          % (container, len(late), staging))
            copies = self.objects.copy_all(container, staging,
                                           in_copy_order(late), 'copy late')
            missing = [e for e in late if copies[e['name']][0] != COPIED]
            if missing:
                raise MigrationError('%s: %d late objects not in %s (listed '
                                     'but unreadable: expired?)' % (
                                         container, len(missing), staging))
            summary['copied'] += len(late)
            versions.update((e['name'], copies[e['name']][1]) for e in late)
        deletes = self.objects.parallel(
            lambda name: self._delete_staged(
                container, staging, name, versions[name]),
            entries, '%s: empty' % container)
        for name, (result, copied, version) in deletes.items():
            if result == DELETED:
                self.emptied[name] = Deletion(version, DELETE)
            summary['copied'] += copied
        deletes = {name: result for name, (result, _, _) in deletes.items()}
        summary['deleted'] += sum(1 for result in deletes.values()
                                  if result == DELETED)
        # replaced since they were listed (NEWER), or deleted (ABSENT)
        self._settle_all(container, staging, [
            e for e in entries if deletes[e['name']] != DELETED and
            e['name'] not in self.emptied], summary)

    def _delete_staged(self, container, staging, name, version):
        """Delete the object of C whose staged version is ``version``,
        first copying to S any later version a client wrote meanwhile (a
        POST's new metadata included): ``(DELETED, NEWER or ABSENT, the
        number of copies made, the version deleted)``; NEWER and ABSENT
        are settled later."""
        copied = 0
        # whether C still held ``version`` as this run fenced it (the
        # fence's 409 may then be the replicas that took it:
        # ObjectMover.delete_unchanged)
        fenced = False
        for attempt in range(PASSES):
            result = self.objects.delete_unchanged(container, staging, name,
                                                   version, fenced)
            if result != CHANGED:
                return result, copied, version
            outcome, latest = self.objects.copy_object(container, staging,
                                                       name)
            if outcome != COPIED:
                return ABSENT, copied, version  # gone: settled later
            fenced = Timestamp(latest) == Timestamp(version)
            copied += not fenced
            version = latest
        raise MigrationError('%s/%s: a client keeps writing it' % (
            container, name))

    def _settle_all(self, container, staging, entries, summary):
        settled = self.objects.parallel(lambda name: self._settle(
            container, staging, name), entries, '%s: settle' % container)
        for result in settled.values():
            if result in summary:
                summary[result] += 1
            if result == 'copied':
                summary['deleted'] += 1

    def _settle(self, container, staging, name):
        with self.account.unretried():
            return self._settle_unretried(container, staging, name)

    def _settle_unretried(self, container, staging, name):
        """A staged object that C does not hold as listed: decide whether
        S keeps its copy (for the restore), takes a client's later version
        of it, or drops it (a client deleted it).  Swift keeps no tombstone
        across C's change of policy, so this is read from the object
        servers before C is deleted: a probe, a zero-byte PUT dated by the
        staged version, after this move's own deletes of it, loses only to
        a client's later write or tombstone.  'staged' (S keeps its copy),
        'copied' (S took the client's version, deleted from C), 'dropped'
        (S's copy is deleted), or None (nothing staged)."""
        outcome, version = self.objects.probe(container, staging, name)
        if outcome == GONE:
            return None
        if outcome == COPIED and self.objects.delete_object(
                container, name, version, UNPROBE) == DELETED:
            # nothing later than what this move deleted: S's copy is it
            self.emptied[name] = Deletion(version, UNPROBE)
            return 'staged'
        for attempt in range(PASSES):
            # what C holds is the client's: copy it, or drop S's copy
            outcome, latest = self.objects.copy_object(container, staging,
                                                       name)
            if outcome == GONE:
                if self.objects.delete_object(
                        staging, name, version) == NEWER:
                    raise MigrationError('%s/%s holds a later write than '
                                         'this move\'s' % (staging, name))
                self.progress('%s: %s was deleted by a client meanwhile'
                              % (container, name))
                return 'dropped'
            version = latest
            if self.objects.delete_unchanged(
                    container, staging, name, version) == DELETED:
                self.emptied[name] = Deletion(version, DELETE)
                return 'copied'
        raise MigrationError('%s/%s: a client keeps writing it' % (
            container, name))


class RestorePhase(Phase):
    """restore S -> C: every object copied back, each copy verified."""

    def run(self, journal, summary):
        container, staging = journal.container, journal.staging
        self.mark(journal)
        kept = []
        # lost to a client's later write or tombstone (answered 202)
        later = set()

        def missing():
            staged = self.account.listing(staging)
            current = index(self.account.listing(container))
            kept[:] = [e['name'] for e in staged
                       if restore_action(e, current) == 'keep']
            return [e for e in staged if e['name'] not in later and
                    restore_action(e, current) == 'copy']
        # dated after every write of this run to the same names (its
        # fences, deletes and probes in C's old policy): see RESTORE
        self.objects.copy_passes(
            staging, container, missing, 'restore',
            lambda left: '%s: %d objects of %s still missing' % (
                container, left, staging), summary, 'restored', later,
            RESTORE)
        kept = sorted(set(kept) | later)
        if kept:
            self.progress('%s: kept %d objects clients wrote or deleted '
                          'meanwhile: %s' % (container, len(kept),
                                             ', '.join(kept[:10])))
        summary['kept_newer'] = len(kept)
        # C holds a verified copy of every object of S (or a newer one)
        self.next_phase(journal, 'cleanup')


class CleanupPhase(Phase):
    """cleanup S: deleted, with the journal."""

    def run(self, journal, summary):
        container, staging = journal.container, journal.staging
        self.account.conn.post_container(container, {MARK_HEADER: ''})
        for attempt in range(5):
            if self.account.head_container(staging) is None:
                break
            # C holds everything S does, so S goes whole, late arrivals
            # (only an operator can write to it) included
            self.objects.delete_all(staging, self.account.listing(staging),
                                    'cleanup')
            if self.account.delete_container(staging):
                break
        else:
            raise MigrationError('%s keeps getting objects' % staging)
        try:
            self.account.conn.delete_object(JOURNAL_CONTAINER,
                                            'journal/' + container)
        except ClientException as err:
            if http_status(err) != 404:
                raise
