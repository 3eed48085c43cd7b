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
"""The move of a tenant's containers, one at a time, each under its lock:
``swift-mass migrate plan``, ``run`` and ``abort`` of one container."""
import time

from swift_mass.cli.migrate.account import Account
from swift_mass.cli.migrate.decisions import (
    JOURNAL_CONTAINER, MARK_HEADER, PHASES, ROLES, UPDATES_WAIT,
    MigrationError, is_ours, refusal, saved_headers, stamp_base)
from swift_mass.cli.migrate.journal import Journal
from swift_mass.cli.migrate.lock import Lock
from swift_mass.cli.migrate.objects import ObjectMover
from swift_mass.cli.migrate.phases import (
    CleanupPhase, CopyPhase, EmptyPhase, RestorePhase)


class Migrator(object):
    """Moves one tenant's containers; ``connect()`` returns a swiftclient
    Connection on the tenant's account (one per thread: they are not
    thread-safe)."""

    def __init__(self, connect, target, progress=lambda msg: None,
                 workers=8, settle=60, lock_ttl=30, lock_wait=None,
                 delete_retries=30, updates_wait=UPDATES_WAIT,
                 sleep=time.sleep, clock=time.time):
        self.target = target
        self.progress = progress
        #: the phase the run is in (PHASES), None before the first
        self.phase = None
        self.lock_ttl = lock_ttl
        self.lock_wait = lock_ttl + 5 if lock_wait is None else lock_wait
        self.clock = clock
        self.account = Account(connect, delete_retries, sleep, clock)
        self.objects = ObjectMover(self.account, progress,
                                   max(1, int(workers)), stamp_base(clock()))
        self.phases = {
            'copy': CopyPhase(self.account, self.objects, progress, settle),
            'empty': EmptyPhase(self.account, self.objects, progress,
                                updates_wait),
            'restore': RestorePhase(self.account, self.objects, progress),
            'cleanup': CleanupPhase(self.account, self.objects, progress)}

    def plan(self, container):
        head = self.account.head_container(container)
        journal = self.account.journal(container) if \
            self.account.head_container(JOURNAL_CONTAINER) is not None \
            else None
        if head is None and journal is None:
            raise MigrationError('container %s does not exist' % container)
        head = head or {}  # between its deletion and its creation
        policy = head.get('x-storage-policy')
        row = {'container': container, 'policy': policy,
               'target': self.target,
               'objects': int(head.get('x-container-object-count', 0)),
               'bytes': int(head.get('x-container-bytes-used', 0)),
               'phase': journal.phase if journal else None}
        reason = refusal(head)
        if journal:
            row['target'] = journal.target
            row['move'] = 'in progress (phase %s)' % journal.phase
        elif reason:
            row['move'] = 'no: ' + reason
        elif policy == self.target:
            row['move'] = 'no: already in %s' % policy
        else:
            row['move'] = 'yes'
        return row

    # --- the procedure ---------------------------------------------------

    def run(self, container):
        """Move ``container`` (or finish moving it); a summary dict."""
        if is_ours(container):
            raise MigrationError('%s is a migration container' % container)
        return self._locked(container, self._run_locked)

    def stop(self, why):
        """Stop the run under way (from another thread) at its next write,
        as a failed run stops: the mark off, the journal kept."""
        if self.account.lock is not None:
            self.account.lock.stop(why)

    def abort(self, container):
        """Stop moving ``container`` and give it back to its clients; a
        summary dict.  Before it was emptied (phase copy) it stays where it
        was and its staging copies are deleted; after, every object of the
        staging container is restored into it first (in the policy it is
        in by now, or, if it is missing, created again in the one it came
        from), exactly as a finished move would."""
        if is_ours(container):
            raise MigrationError('%s is a migration container' % container)
        return self._locked(container, self._abort_locked)

    def _locked(self, container, work):
        started = self.clock()
        # each run's writes sort after an earlier run's of the same version
        self.objects.base = stamp_base(started)
        self.account.own_or_absent(JOURNAL_CONTAINER)
        try:
            self.account.ensure_container(JOURNAL_CONTAINER, None)
        except MigrationError:
            self.account.forget_journal_container()
            raise
        lock = self.account.lock = Lock(
            self.account.connect, container, self.lock_ttl, self.lock_wait,
            self.account.sleep, self.clock)
        lock.acquire(self.progress)
        try:
            summary = work(container)
        except BaseException as err:
            released = self._release(container)
            lock.release()
            # A run that failed keeps its journal, and so the move, for
            # the next run; one that found nothing to do (a container
            # not being moved) leaves nothing marked behind.  Its own error
            # is the one to tell.
            try:
                self.account.forget_journal_container()
            except Exception as forget_err:
                self.progress('could not delete %s: %s' % (
                    JOURNAL_CONTAINER, forget_err))
            if released and isinstance(err, MigrationError):
                raise MigrationError('%s; %s' % (err, released)) from err
            raise
        lock.release()
        self.account.forget_journal_container()
        summary['seconds'] = round(self.clock() - started, 2)
        return summary

    def _release(self, container):
        """After a run failed: take the write mark off a container being
        moved, unless another run took the lock (and goes on with the
        move).  Its journal stays for the next run, and its staging
        container marked, where readers find what C lacks meanwhile
        (marks.StagedRead).  Client writes to C are as safe as through a
        proxy without the filter.  What was done, for the output, or
        None."""
        if self.account.lock is None or self.account.lock.lost:
            return None
        try:
            journal = self.account.journal(container)
            head = self.account.head_container(container)
            if journal is None or not (head or {}).get(MARK_HEADER.lower()):
                return None
            self.account.conn.post_container(container, {MARK_HEADER: ''})
        except Exception as err:
            self.progress('%s: could not take its write mark off: %s' % (
                container, err))
            return None
        done = ('writes to %s are allowed again; the move stays in phase '
                '%s for the next `swift-mass migrate run` (or `abort`)' % (
                    container, journal.phase))
        self.progress(done)
        return done

    @staticmethod
    def _summary(container):
        return {'container': container, 'copied': 0, 'deleted': 0,
                'dropped': 0, 'kept_newer': 0, 'restored': 0}

    def _abort_locked(self, container):
        summary = self._summary(container)
        journal = self.account.journal(container)
        if journal is None:
            raise MigrationError('%s is not being moved' % container)
        summary.update({'from': journal.source_policy,
                        'to': journal.target})
        self._take_base(journal)
        staging = journal.staging
        self.progress('%s: aborting the move to %s (phase %s)' % (
            container, journal.target, journal.phase))
        if journal.phase == 'copy':
            # nothing was taken from the container: its copies go
            self.account.conn.post_container(container, {MARK_HEADER: ''})
            if self.account.head_container(staging) is not None:
                self.objects.delete_all(
                    staging, self.account.listing(staging), 'abort')
                self.account.delete_container(staging)
            self.account.conn.delete_object(JOURNAL_CONTAINER,
                                            'journal/' + container)
            summary['status'] = 'aborted: left in %s' % journal.source_policy
            return summary
        if journal.phase != 'cleanup':
            head = self.account.head_container(container)
            if head is None:
                self.account.ensure_container(
                    container, journal.source_policy, journal.saved)
            else:
                # emptying took its versioning headers off
                self.account.conn.post_container(container, journal.saved)
                if head.get('x-storage-policy') == journal.source_policy:
                    self._unfence(journal)
            self.phases['restore'].run(journal, summary)
        self.phases['cleanup'].run(journal, summary)
        summary['status'] = 'aborted: restored in %s' % (
            self.account.head_container(container) or {}).get(
                'x-storage-policy')
        return summary

    def _unfence(self, journal):
        """Take the fences of a run killed while emptying C off the objects
        it left in C (:meth:`ObjectMover.unfence`)."""
        container, staging = journal.container, journal.staging
        if self.account.head_container(staging) is None:
            return
        staged = set(e['name'] for e in self.account.listing(staging))
        entries = [e for e in self.account.listing(container)
                   if e['name'] in staged]
        unfenced = self.objects.parallel(lambda name: self.objects.unfence(
            container, staging, name), entries, '%s: unfence' % container)
        count = sum(1 for taken in unfenced.values() if taken)
        if count:
            self.progress('%s: took a killed run\'s fence off %d objects' % (
                container, count))

    def _run_locked(self, container):
        summary = self._summary(container)
        journal = self.account.journal(container)
        if journal is None:
            head = self.account.head_container(container)
            if head is None:
                raise MigrationError('container %s does not exist'
                                     % container)
            policy = head.get('x-storage-policy')
            summary.update({'from': policy, 'to': self.target,
                            'objects': int(head.get(
                                'x-container-object-count', 0))})
            if policy == self.target:
                summary['status'] = 'already in %s' % policy
                return summary
            reason = refusal(head)
            if reason:
                raise MigrationError('%s: %s' % (container, reason))
            # written before the mark, so a crash right after leaves a
            # journal that says what to finish
            journal = self.account.write_journal(Journal(
                container, policy, self.target, saved_headers(head),
                self.clock(), base=self.objects.base))
        elif journal.target != self.target:
            raise MigrationError(
                '%s is being moved to %s already (phase %s): finish that '
                'with --policy %s' % (container, journal.target,
                                      journal.phase, journal.target))
        else:
            self._take_base(journal)
        summary.update({'from': journal.source_policy,
                        'to': journal.target})
        self.progress('%s: %s -> %s, phase %s' % (
            container, journal.source_policy, journal.target,
            journal.phase))
        # each phase ends by journaling the next, which runs at once
        for phase in PHASES:
            if journal.phase == phase:
                self.account.lock.check()
                self.phase = phase
                self.phases[phase].run(journal, summary)
        summary['status'] = 'moved'
        return summary

    def _take_base(self, journal):
        """Date this run's writes after the last run's, before the first
        of them: a run on a host whose clock is behind would otherwise
        take its own earlier deletes for a client's (EmptyPhase._settle)."""
        self.objects.base = max(self.objects.base, journal.base + ROLES)
        journal.base = self.objects.base
        self.account.write_journal(journal)
