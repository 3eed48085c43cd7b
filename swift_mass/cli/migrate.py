"""``swift-mass migrate``: move a tenant's existing containers to the storage
policy (substore) its Mass policy names, explicitly and resumably.

Swift fixes a container's policy when the container is created, so a
container moves by way of a staging container in the target policy::

    copy     C -> S   every object copied server side, each copy verified
    empty    C        every object deleted, then C, then C created again in
                      the target policy
    restore  S -> C   every object copied back, each copy verified
    cleanup  S        deleted, with the journal

``C`` is the container, ``S`` its staging container ``.mass-migrate-<C>``
(a hash when the name would be too long), both in the tenant's account.
The journal ``.mass-migrate/journal/<C>`` (:class:`Journal`) holds the
phase, the policy C came from, the target and C's saved metadata; a phase
is written to it only once the previous one is verified complete, so a run
that dies anywhere is resumed by running the command again.  Every object
is at every moment in C or S (or both) with its original ETag: S is a
verified superset of C before anything in C is deleted, and S is deleted
only once C holds a verified copy of everything in it.

A client's write is never undone, whatever proxy it goes through (one
without the ``mass`` filter refuses nothing).  Every object write of the
move carries an ``X-Timestamp`` made of the version it copies or deletes
(the source's own X-Timestamp, as container sync dates its copies) and a
Timestamp offset (:func:`stamp`): it sorts after that version and before
any later write of a client, which the proxy dates by its clock.  The
object servers keep the newest write whatever order writes reach them in:
a DELETE of the staged version loses to a client's overwrite (409), a copy
loses to a client's later write or tombstone (Swift answers 202).  Swift
compares versions within a policy only, so what a client did to an object
of C between its copy and C's deletion is read back from the object
servers before C goes (:meth:`Migrator._settle`).  The mass filter gives a
reseller admin's X-Timestamp back after gatekeeper shunted it
(:func:`swift_mass.proxy.marks.give_back_timestamp`); the first copy
checks that it did, before anything is deleted.

``swift-mass migrate abort`` stops a move under way (one that keeps
failing: an object a quota or an expiry will not let it copy) and gives the
container back: before it was emptied, as it was (the staging copies are
deleted); after, with every object restored into it, as a finished move
would.  Migrate makes S and the journal container with its mark, which
only a reseller admin can set, and never uses one that a client made.

Client writes (object PUT, POST, DELETE; container PUT, POST, DELETE) to C,
S and the journal container are answered 503 with Retry-After by the
``mass`` proxy filter while the container is marked (``X-Mass-Migrating``,
which the filter takes only from a reseller admin and keeps in container
sysmeta); the operator's own requests pass.  A run that fails takes the
mark off C (its journal and S stay, for the next run): clients write to C
meanwhile as they would through a proxy without the filter.

Only the pure decisions live in functions at the top of this module so they
can be tested without a cluster; :class:`Migrator` does the I/O with
swiftclient connections (real HTTP, through the whole proxy pipeline).
"""
import contextlib
import json
import math
import os
import socket
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from swift.common.utils import Timestamp
from swiftclient.exceptions import ClientException

from swift_mass import tags
from swift_mass.cli import client, output

JOURNAL_CONTAINER = '.mass-migrate'
STAGING_PREFIX = tags.STAGING_PREFIX
staging_name = tags.staging_name
MARK_HEADER = tags.MIGRATING_MARK_HEADER
PHASES = ('copy', 'empty', 'restore', 'cleanup')
# copy passes before a phase gives up on objects it cannot copy
PASSES = 3
# what HEAD needs to see a manifest or a symlink as itself, not its target
RAW_QUERY = 'multipart-manifest=get&symlink=get'
# kinds in the order they are copied: a manifest PUT checks its segments
# and a static symlink its target, which may be in the same container
KINDS = ('plain', 'dlo', 'slo', 'symlink')

# Container headers a client can set and that go with the container when it
# is created again.  X-Versions-Location and X-History-Location are taken off
# the old container before it is emptied: with them a DELETE would restore
# an older version instead of emptying it.
SAVED_HEADERS = ('x-container-read', 'x-container-write',
                 'x-versions-location', 'x-history-location')
VERSIONING_HEADERS = ('x-versions-location', 'x-history-location')
USER_META_PREFIX = 'x-container-meta-'
# what a reader of S needs to read it as it reads C: the read ACL, and CORS
# for a browser's
CORS_PREFIX = USER_META_PREFIX + 'access-control-'

# The offsets (Swift's Timestamp offsets) of a run's object writes, added
# to its base (:func:`stamp_base`): a copy, a delete of the version copied,
# and a probe of what a client did to an object (Migrator._settle) and its
# removal.  Within a run each sorts after the one before it; a later run's
# base is greater than all of an earlier run's offsets.
COPY, DELETE, PROBE, UNPROBE = 1, 2, 3, 4
ROLES = 8
# the content type of a probe, a zero-byte object
PROBE_TYPE = 'application/x-mass-migrate-probe'
# what copy_object and delete_object found
COPIED, GONE, NEWER, DELETED, ABSENT = (
    'copied', 'gone', 'newer', 'deleted', 'absent')

# Object headers a copy must carry over unchanged, apart from user metadata.
COMPARED_HEADERS = ('content-type', 'content-disposition', 'content-encoding',
                    'x-delete-at', 'x-object-manifest',
                    'x-static-large-object', 'x-symlink-target',
                    'x-symlink-target-account', 'x-symlink-target-etag')


class MigrationError(Exception):
    pass


class LockHeld(MigrationError):
    pass


# --- pure decisions ------------------------------------------------------

def is_ours(container):
    """Whether ``container`` is one of the migration's own containers."""
    return container == JOURNAL_CONTAINER or \
        container.startswith(STAGING_PREFIX)


def default_policy(policies):
    for policy in policies:
        if policy.get('default'):
            return policy['name']
    raise MigrationError('the cluster\'s /info names no default policy')


def resolve_target(tenant, table, option, policies):
    """``(policy name, why)``: the policy the tenant's containers move to.

    ``option`` (``--policy``) wins; otherwise the tenant's Mass policy
    (``table[tenant]['ring']``, '' meaning the default policy).  The name is
    checked against the cluster's policies (``/info``)."""
    names = [p['name'] for p in policies]
    if option:
        why = '--policy'
        name = option
    else:
        entry = table.get(tenant)
        if not entry:
            raise MigrationError(
                '%s has no Mass policy (swift-mass tenants); give --policy'
                % tenant)
        if entry.get('opted_out'):
            # its entry only says Mass leaves it alone: no substore
            raise MigrationError(
                '%s is opted out of Mass (swift-mass explain); give --policy'
                % tenant)
        name = entry.get('ring') or default_policy(policies)
        why = 'Mass policy: class %s, substore %r' % (
            entry.get('class'), entry.get('ring') or '')
    for policy in policies:
        if name == policy['name'] or name in (
                a.strip() for a in policy.get('aliases', '').split(',')):
            return policy['name'], why
    raise MigrationError('storage policy %r is not one of the cluster\'s '
                         '(%s)' % (name, ', '.join(names)))


def refusal(headers):
    """Why a container (its HEAD headers, lower-case) cannot be migrated,
    or None."""
    if headers.get('x-versions-enabled', '').lower() == 'true':
        return ('object versioning is enabled: its versions live in a '
                'reserved container this command cannot move')
    if headers.get('x-container-sync-to'):
        return ('container sync is configured: emptying the container '
                'would delete the objects at the sync target')
    return None


def saved_headers(headers):
    """What of a container's HEAD headers (lower-case) to set on its
    successor: ACLs, legacy versioning and user metadata (quotas, CORS,
    temp URL keys, static web included)."""
    return {key.lower(): value for key, value in headers.items()
            if is_saved_header(key.lower())}


def is_saved_header(key):
    """Whether a container header (lower-case) is one to save."""
    return key in SAVED_HEADERS or key.startswith(USER_META_PREFIX)


def staged_headers(headers):
    """What of a container's headers (lower-case) its staging container
    carries: the read ACL and the CORS metadata."""
    return {key: value for key, value in headers.items()
            if key == 'x-container-read' or key.startswith(CORS_PREFIX)}


def stamp_base(now):
    """The base of a run's offsets, from the time it starts: a later run
    (a microsecond later at least) has a greater one."""
    return int(now * 1e6) * ROLES


def stamp(version, base, role):
    """The X-Timestamp of an object write of a run (offsets ``base``) that
    copies or deletes ``version`` (an X-Timestamp, as HEAD shows it)."""
    return Timestamp(version, offset=base + role).internal


def listed_version(entry):
    """The version of a listing entry (as HEAD shows its X-Timestamp)."""
    return Timestamp.from_isoformat(entry['last_modified']).normal


def is_probe(key):
    """Whether a listing key (:func:`listing_key`) is a probe's."""
    return key is not None and key[1] == PROBE_TYPE


def kind_of(headers):
    """plain, slo, dlo or symlink, from an object's raw HEAD headers."""
    if 'x-symlink-target' in headers:
        return 'symlink'
    if headers.get('x-static-large-object', '').lower() == 'true':
        return 'slo'
    if 'x-object-manifest' in headers:
        return 'dlo'
    return 'plain'


def copy_query(kind):
    """The query that makes a server-side copy copy the object itself: the
    manifest rather than the concatenated segments, the link rather than
    its target."""
    return {'plain': None, 'slo': 'multipart-manifest=get',
            'dlo': 'multipart-manifest=get',
            'symlink': 'symlink=get'}[kind]


def _etag(value):
    return (value or '').strip('"')


def fingerprint(raw, plain=None):
    """What a faithful copy has in common with its source: ETag and size
    (an SLO's from a plain HEAD, ``plain``: its manifest's own ETag records
    its segments' last-modified times, which a copy of the segments
    changes), content type, user metadata and the headers that make an
    object a manifest, a symlink or expiring."""
    sized = plain if plain is not None else raw
    found = {'etag': _etag(sized.get('etag')),
             'content-length': sized.get('content-length')}
    for key, value in raw.items():
        key = key.lower()
        if key in COMPARED_HEADERS or key.startswith('x-object-meta-'):
            found[key] = value
    if plain is not None:
        # SLO answers a manifest GET/HEAD with application/json
        found['content-type'] = plain.get('content-type')
    return found


def mismatches(source, copy):
    """The fields (sorted) in which two fingerprints differ."""
    return sorted(k for k in set(source) | set(copy)
                  if source.get(k) != copy.get(k))


def listing_key(entry):
    """A listing entry's identity: size, content type and ETag (an SLO's
    slo_etag, as its hash changes with its segments' copies), plus a
    symlink's target."""
    etag = entry.get('slo_etag') or entry.get('hash')
    return (entry.get('bytes'), entry.get('content_type'), _etag(etag),
            entry.get('symlink_path'))


def listing_kind(entry):
    """The copy order rank of a listing entry (a DLO is not visible in a
    listing and goes with the plain objects, which suits it: its PUT checks
    nothing)."""
    if entry.get('symlink_path'):
        return 'symlink'
    if entry.get('slo_etag'):
        return 'slo'
    return 'plain'


def in_copy_order(entries):
    rank = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(entries, key=lambda e: (rank[listing_kind(e)], e['name']))


def index(entries):
    return {e['name']: listing_key(e) for e in entries}


def not_in(entries, other):
    """The entries whose name is missing from, or whose identity differs
    in, ``other`` (an :func:`index`)."""
    return [e for e in entries if other.get(e['name']) != listing_key(e)]


def empty_action(entry, staging):
    """Phase empty, for an object of the old container: 'delete' if the
    staging container holds the same object, else 'copy' (it was written
    after the copy phase checked, e.g. into a container a client created
    again while it was gone) before deleting it."""
    if staging.get(entry['name']) == listing_key(entry):
        return 'delete'
    return 'copy'


def restore_action(entry, current):
    """Phase restore, for an object of the staging container: 'skip' if the
    new container has it already, 'keep' if it holds a different object of
    that name (a client wrote it there after the container was created
    again: newer than the staged one), 'copy' otherwise."""
    mine = current.get(entry['name'])
    if mine is None or is_probe(mine):
        # a probe is left by a run killed while emptying
        return 'copy'
    if mine == listing_key(entry):
        return 'skip'
    return 'keep'


def container_step(phase, policy, source_policy, target):
    """Phase empty: what to do with the container given its policy now
    (None: it does not exist): 'create' it, 'empty' it (the old one, or
    one a client created in another policy meanwhile), or go on to
    'restore' (it is in the target policy: the new one)."""
    if policy is None:
        return 'create'
    if policy == target:
        return 'restore'
    return 'empty'


def mark_value(target, since):
    return 'target=%s; since=%d' % (target, since)


def journal_fault(container, data):
    """What makes ``data`` (a journal as stored) not one that migrate
    wrote for ``container``, or None."""
    if not isinstance(data, dict):
        return 'not a JSON object'
    if data.get('container') != container:
        return 'it is the journal of %r' % (data.get('container'),)
    if data.get('staging') != staging_name(container):
        return 'its staging container is %r, not %r' % (
            data.get('staging'), staging_name(container))
    if data.get('phase') not in PHASES:
        return 'its phase is %r' % (data.get('phase'),)
    for key in ('source_policy', 'target'):
        if not isinstance(data.get(key), str):
            return 'its %s is %r' % (key, data.get(key))
    if not isinstance(data.get('marked_at'), (int, float)):
        return 'its marked_at is %r' % (data.get('marked_at'),)
    base = data.get('base', 0)
    if not isinstance(base, int) or isinstance(base, bool) or base < 0:
        return 'its base is %r' % (base,)
    saved = data.get('saved')
    if not isinstance(saved, dict):
        return 'its saved headers are %r' % (saved,)
    wrong = sorted(key for key, value in saved.items()
                   if not is_saved_header(key) or not isinstance(value, str))
    if wrong:
        return 'its saved headers hold %s' % ', '.join(wrong)
    return None


class Journal(object):
    """A move under way, kept as ``.mass-migrate/journal/<C>``: what a
    run needs to go on where the last one stopped (persisted as Swift's
    sharder persists its CleavingContext).

    :param container: C, the container being moved.
    :param source_policy: the storage policy C was in.
    :param target: the storage policy C moves to.
    :param saved: C's headers (:func:`saved_headers`) to set on C created
        again, as they were when the move last marked C or emptied it.
    :param marked_at: when the move began: its mark on C names it.
    :param phase: the first of :data:`PHASES` not verified complete.
    :param base: the offsets base (:func:`stamp_base`) of the last run
        that wrote to the move's objects: the next run's is greater,
        whatever the clock of the host it runs on says.
    :param updated: when the journal was last written.

    The staging container, ``staging``, is always :func:`staging_name` of
    C: a journal that names another is refused, as is one whose saved
    headers are not headers migrate saves."""

    def __init__(self, container, source_policy, target, saved, marked_at,
                 phase='copy', base=0, updated=None):
        self.container = container
        self.staging = staging_name(container)
        self.source_policy = source_policy
        self.target = target
        self.saved = dict(saved)
        self.marked_at = marked_at
        self.phase = phase
        self.base = base
        self.updated = updated

    @property
    def mark(self):
        """The value of the move's mark on C."""
        return mark_value(self.target, self.marked_at)

    def to_dict(self):
        return {'container': self.container, 'staging': self.staging,
                'source_policy': self.source_policy, 'target': self.target,
                'saved': dict(self.saved), 'marked_at': self.marked_at,
                'phase': self.phase, 'base': self.base,
                'updated': self.updated}

    def dump(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def load(cls, container, body):
        """The journal of ``container`` from what is stored; a
        MigrationError if migrate did not write it for that container
        (only a reseller admin can write to the journal container: an
        operator's mistake, not a move to go on with)."""
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        fault = journal_fault(container, data)
        if fault:
            raise MigrationError(
                '%s/journal/%s is not a journal swift-mass migrate wrote '
                'for %s (%s): nothing is done; see to %s and %s by hand '
                'and delete it' % (JOURNAL_CONTAINER, container, container,
                                   fault, container, staging_name(container)))
        return cls(container, data['source_policy'], data['target'],
                   data['saved'], data['marked_at'], data['phase'],
                   data.get('base', 0), data.get('updated'))


# --- I/O ------------------------------------------------------------------

def _status(err):
    return getattr(err, 'http_status', None)


def _lower(headers):
    return {k.lower(): v for k, v in headers.items()}


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
            if _status(err) == 404:
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
                if _status(err) != 412:
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

    def check(self):
        if self.lost:
            raise MigrationError('lost the migration lock: %s' % self.lost)

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


class Migrator(object):
    """Moves one tenant's containers; ``connect()`` returns a swiftclient
    Connection on the tenant's account (one per thread: they are not
    thread-safe)."""

    def __init__(self, connect, target, progress=lambda msg: None,
                 workers=8, settle=60, lock_ttl=30, lock_wait=None,
                 delete_retries=30, sleep=time.sleep, clock=time.time):
        self.connect = connect
        self.target = target
        self.progress = progress
        self.workers = max(1, int(workers))
        self.settle = settle
        self.lock_ttl = lock_ttl
        self.lock_wait = lock_ttl + 5 if lock_wait is None else lock_wait
        self.delete_retries = delete_retries
        self.sleep = sleep
        self.clock = clock
        self._local = threading.local()
        self.lock = None
        self.base = stamp_base(clock())
        # the objects of C this run deleted itself (Migrator._settle)
        self._emptied = set()

    @property
    def conn(self):
        conn = getattr(self._local, 'conn', None)
        if conn is None:
            conn = self._local.conn = self.connect()
        return conn

    # --- reading ---------------------------------------------------------

    def listing(self, container):
        """Every object entry of ``container`` (swiftclient asks for it
        page by page)."""
        return self.conn.get_container(container, full_listing=True)[1]

    def head_container(self, container):
        try:
            return _lower(self.conn.head_container(container))
        except ClientException as err:
            if _status(err) == 404:
                return None
            raise

    def journal(self, container):
        """The :class:`Journal` of the move of ``container``, or None."""
        try:
            _, body = self.conn.get_object(JOURNAL_CONTAINER,
                                           'journal/' + container)
        except ClientException as err:
            if _status(err) == 404:
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

    def plan(self, container):
        head = self.head_container(container)
        journal = self.journal(container) if self.head_container(
            JOURNAL_CONTAINER) is not None else None
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
        self.base = stamp_base(started)
        self._emptied = set()
        self._own_or_absent(JOURNAL_CONTAINER)
        try:
            self._ensure_container(JOURNAL_CONTAINER, None)
        except MigrationError:
            self._forget_journal_container()
            raise
        self.lock = Lock(self.connect, container, self.lock_ttl,
                         self.lock_wait, self.sleep, self.clock)
        self.lock.acquire(self.progress)
        try:
            summary = work(container)
        except BaseException as err:
            released = self._release(container)
            self.lock.release()
            # A run that failed keeps its journal, and so the move, for
            # the next run; one that found nothing to do (a container
            # not being moved) leaves nothing marked behind.  Its own error
            # is the one to tell.
            try:
                self._forget_journal_container()
            except Exception as forget_err:
                self.progress('could not delete %s: %s' % (
                    JOURNAL_CONTAINER, forget_err))
            if released and isinstance(err, MigrationError):
                raise MigrationError('%s; %s' % (err, released)) from err
            raise
        self.lock.release()
        self._forget_journal_container()
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
        if self.lock is None or self.lock.lost:
            return None
        try:
            journal = self.journal(container)
            head = self.head_container(container)
            if journal is None or not (head or {}).get(MARK_HEADER.lower()):
                return None
            self.conn.post_container(container, {MARK_HEADER: ''})
        except Exception as err:
            self.progress('%s: could not take its write mark off: %s' % (
                container, err))
            return None
        done = ('writes to %s are allowed again; the move stays in phase '
                '%s for the next `swift-mass migrate run` (or `abort`)' % (
                    container, journal.phase))
        self.progress(done)
        return done

    def _own_or_absent(self, container):
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

    @staticmethod
    def _summary(container):
        return {'container': container, 'copied': 0, 'deleted': 0,
                'dropped': 0, 'kept_newer': 0, 'restored': 0}

    def _abort_locked(self, container):
        summary = self._summary(container)
        journal = self.journal(container)
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
            self.conn.post_container(container, {MARK_HEADER: ''})
            if self.head_container(staging) is not None:
                self._delete_all(staging, self.listing(staging), 'abort')
                self._delete_container(staging)
            self.conn.delete_object(JOURNAL_CONTAINER, 'journal/' + container)
            summary['status'] = 'aborted: left in %s' % journal.source_policy
            return summary
        if journal.phase != 'cleanup':
            if self.head_container(container) is None:
                self._ensure_container(container, journal.source_policy,
                                       journal.saved)
            else:
                # emptying took its versioning headers off
                self.conn.post_container(container, journal.saved)
            self._phase_restore(journal, summary)
        self._phase_cleanup(journal, summary)
        summary['status'] = 'aborted: restored in %s' % (
            self.head_container(container) or {}).get('x-storage-policy')
        return summary

    def _run_locked(self, container):
        summary = self._summary(container)
        journal = self.journal(container)
        if journal is None:
            head = self.head_container(container)
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
            journal = self.write_journal(Journal(
                container, policy, self.target, saved_headers(head),
                self.clock(), base=self.base))
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
        for phase, run_phase in (('copy', self._phase_copy),
                                 ('empty', self._phase_empty),
                                 ('restore', self._phase_restore),
                                 ('cleanup', self._phase_cleanup)):
            if journal.phase == phase:
                self.lock.check()
                run_phase(journal, summary)
        summary['status'] = 'moved'
        return summary

    def _take_base(self, journal):
        """Date this run's writes after the last run's, before the first
        of them: a run on a host whose clock is behind would otherwise
        take its own earlier deletes for a client's (Migrator._settle)."""
        self.base = max(self.base, journal.base + ROLES)
        journal.base = self.base
        self.write_journal(journal)

    def _next_phase(self, journal, phase):
        journal.phase = phase
        self.write_journal(journal)

    def _mark(self, journal):
        """Mark C (again); True if it was not marked: a run that failed
        took the mark off, or C was created again."""
        head = self.head_container(journal.container)
        if (head or {}).get(MARK_HEADER.lower()) == journal.mark:
            return False
        self.conn.post_container(journal.container,
                                 {MARK_HEADER: journal.mark})
        self._check_mark(journal.container,
                         self.head_container(journal.container),
                         journal.mark)
        return True

    def _check_mark(self, container, head, mark):
        """Refuse to go on unless the proxy shows the mark: only then are
        client writes refused (the mass filter runs, and these are a
        reseller admin's credentials)."""
        if (head or {}).get(MARK_HEADER.lower()) != mark:
            raise MigrationError(
                'the mark on %s did not take: the proxy does not run the '
                'mass filter, or the credentials are not a reseller '
                'admin\'s; client writes would not be refused, so nothing '
                'is moved' % container)

    def _ensure_container(self, container, policy, extra=None):
        mark = mark_value(policy or '', self.clock())
        headers = {MARK_HEADER: mark}
        if policy:
            headers['X-Storage-Policy'] = policy
        headers.update(extra or {})
        try:
            self.conn.put_container(container, headers=headers)
        except ClientException as err:
            if _status(err) != 409:  # 409: it exists in another policy
                raise
        head = self.head_container(container)
        if head is None:
            raise MigrationError('%s vanished right after it was created'
                                 % container)
        if not policy or head.get('x-storage-policy') == policy:
            # (in another policy it is not ours: the caller sees to it)
            self._check_mark(container, head, mark)
        if policy and head.get('x-storage-policy') != policy:
            return head.get('x-storage-policy')
        return policy

    def _take_headers(self, journal, kept=()):
        """Save C's headers as they are now for its successor: a client
        may have changed them (before the mark took, through a proxy
        without the filter, or after a failed run), and a read ACL revoked
        must stay revoked.  ``kept``: those the move took off C itself,
        kept as saved.  The staging container follows."""
        head = self.head_container(journal.container) or {}
        saved = saved_headers(head)
        saved.update((key, value) for key, value in journal.saved.items()
                     if key in kept)
        if saved != journal.saved:
            journal.saved = saved
            self.write_journal(journal)
        self._stage_headers(journal)

    def _stage_headers(self, journal):
        """Give S the read ACL and the CORS metadata of C, and take off
        those C lost: readers of C read from S what C lacks meanwhile
        (marks.StagedRead), and S must grant them what C does."""
        head = self.head_container(journal.staging) or {}
        wanted = staged_headers(journal.saved)
        change = {key: wanted.get(key, '')
                  for key in set(wanted) | set(staged_headers(head))
                  if wanted.get(key, '') != head.get(key, '')}
        if change:
            self.conn.post_container(journal.staging, change)

    def _phase_copy(self, journal, summary):
        container, staging = journal.container, journal.staging
        self._own_or_absent(staging)
        marked_at = self.clock() if self._mark(journal) else \
            journal.marked_at
        got = self._ensure_container(staging, journal.target)
        if got != journal.target:
            raise MigrationError(
                'staging container %s exists in policy %s, not %s: it is '
                'not this migration\'s' % (staging, got, journal.target))
        self._take_headers(journal)
        # writes admitted before the mark reached every proxy (container
        # info is cached) or still uploading must land before the final
        # listing below, or they would be copied only by the empty phase
        wait = marked_at + self.settle - self.clock()
        if wait > 0:
            self.progress('%s: waiting %ds for writes in flight' % (
                container, wait))
            self.sleep(wait)
        self._copy_passes(
            container, staging, lambda: not_in(
                self.listing(container), index(self.listing(staging))),
            'copy', lambda left: '%s: %d objects still differ in %s' % (
                container, left, staging), summary, 'copied')
        # S holds a verified copy of every object of C: from here on S is
        # the reference and C may be emptied
        self._next_phase(journal, 'empty')

    def _phase_empty(self, journal, summary):
        container = journal.container
        for attempt in range(5):
            head = self.head_container(container)
            step = container_step(
                'empty', head and head.get('x-storage-policy'),
                journal.source_policy, journal.target)
            if step == 'restore':
                break
            if step == 'empty':
                self._empty(journal, summary)
                if not self._delete_container(container):
                    continue  # objects arrived: empty it again
            self.progress('%s: creating it again in %s' % (
                container, journal.target))
            self._ensure_container(container, journal.target,
                                   journal.saved)
        else:
            raise MigrationError(
                '%s: clients keep creating it again in another policy'
                % container)
        self._next_phase(journal, 'restore')

    def _empty(self, journal, summary):
        container, staging = journal.container, journal.staging
        versioning = [h for h in VERSIONING_HEADERS if h in journal.saved]
        if versioning:
            self.conn.post_container(container, {
                'X-Remove-' + h[2:]: 'x' for h in versioning})
        self._mark(journal)
        self._take_headers(journal, kept=VERSIONING_HEADERS)
        staged = {e['name']: e for e in self.listing(staging)}
        entries = self.listing(container)
        listed = index(entries)
        # what C no longer lists or lists as a probe: deleted by a client
        # (through a proxy without the filter), by its expiry or by this
        # move in a run that was killed, or probed by that run
        unsure = [entry for name, entry in staged.items()
                  if name not in self._emptied and
                  (name not in listed or is_probe(listed[name]))]
        self._settle_all(container, staging, unsure, summary)
        settled = set(e['name'] for e in unsure)
        entries = [e for e in entries if e['name'] not in settled]
        versions = {name: listed_version(e) for name, e in staged.items()}
        late = [e for e in entries
                if empty_action(e, index(staged.values())) == 'copy']
        if late:
            self.progress('%s: %d objects written late; copying them to %s'
                          % (container, len(late), staging))
            copies = self._copy_all(container, staging, in_copy_order(late),
                                    'copy late')
            missing = [e for e in late if copies[e['name']][0] != COPIED]
            if missing:
                raise MigrationError('%s: %d late objects not in %s (listed '
                                     'but unreadable: expired?)' % (
                                         container, len(missing), staging))
            summary['copied'] += len(late)
            versions.update((e['name'], copies[e['name']][1]) for e in late)
        deletes = self._parallel(lambda name: self.delete_object(
            container, name, versions[name]), entries,
            '%s: empty' % container)
        for name, result in deletes.items():
            if result == DELETED:
                self._emptied.add(name)
        summary['deleted'] += sum(1 for result in deletes.values()
                                  if result == DELETED)
        # replaced since they were listed (NEWER), or deleted (ABSENT)
        self._settle_all(container, staging, [
            e for e in entries if deletes[e['name']] != DELETED and
            e['name'] not in self._emptied], summary)

    def _settle_all(self, container, staging, entries, summary):
        settled = self._parallel(lambda name: self._settle(
            container, staging, name), entries, '%s: settle' % container)
        for result in settled.values():
            if result in summary:
                summary[result] += 1
            if result == 'copied':
                summary['deleted'] += 1

    @contextlib.contextmanager
    def _unretried(self):
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

    def _settle(self, container, staging, name):
        with self._unretried():
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
        outcome, version = self._probe(container, staging, name)
        if outcome == GONE:
            return None
        if outcome == COPIED and self.delete_object(
                container, name, version, UNPROBE) == DELETED:
            # nothing later than what this move deleted: S's copy is it
            self._emptied.add(name)
            return 'staged'
        for attempt in range(PASSES):
            # what C holds is the client's: copy it, or drop S's copy
            outcome, latest = self.copy_object(container, staging, name)
            if outcome == GONE:
                if self.delete_object(staging, name, version) == NEWER:
                    raise MigrationError('%s/%s holds a later write than '
                                         'this move\'s' % (staging, name))
                self.progress('%s: %s was deleted by a client meanwhile'
                              % (container, name))
                return 'dropped'
            version = latest
            if self.delete_object(container, name, version) == DELETED:
                self._emptied.add(name)
                return 'copied'
        raise MigrationError('%s/%s: a client keeps writing it' % (
            container, name))

    def _probe(self, container, staging, name):
        """PUT a probe in C dated after the staged version of ``name``:
        ``(COPIED or NEWER, the staged version)``, or ``(GONE, None)``."""
        try:
            version = self._head_object(staging, name).get('x-timestamp')
        except ClientException as err:
            if _status(err) == 404:
                return GONE, None
            raise
        self.lock.check()
        answer = {}
        # expired as it lands (Swift checks X-Delete-At against the write's
        # time): a reader gets a 404 and the staged copy, never the probe
        self.conn.put_object(container, name, b'', content_length=0,
                             headers={'Content-Type': PROBE_TYPE,
                                      'X-Timestamp': stamp(
                                          version, self.base, PROBE),
                                      'X-Delete-At': str(
                                          int(float(version)) + 1)},
                             response_dict=answer)
        return (NEWER if answer.get('status') == 202 else COPIED), version

    def _phase_restore(self, journal, summary):
        container, staging = journal.container, journal.staging
        self._mark(journal)
        kept = []
        # lost to a client's later write or tombstone (answered 202)
        later = set()

        def missing():
            staged = self.listing(staging)
            current = index(self.listing(container))
            kept[:] = [e['name'] for e in staged
                       if restore_action(e, current) == 'keep']
            return [e for e in staged if e['name'] not in later and
                    restore_action(e, current) == 'copy']
        self._copy_passes(
            staging, container, missing, 'restore',
            lambda left: '%s: %d objects of %s still missing' % (
                container, left, staging), summary, 'restored', later)
        kept = sorted(set(kept) | later)
        if kept:
            self.progress('%s: kept %d objects clients wrote or deleted '
                          'meanwhile: %s' % (container, len(kept),
                                             ', '.join(kept[:10])))
        summary['kept_newer'] = len(kept)
        # C holds a verified copy of every object of S (or a newer one)
        self._next_phase(journal, 'cleanup')

    def _phase_cleanup(self, journal, summary):
        container, staging = journal.container, journal.staging
        self.conn.post_container(container, {MARK_HEADER: ''})
        for attempt in range(5):
            if self.head_container(staging) is None:
                break
            # C holds everything S does, so S goes whole, late arrivals
            # (only an operator can write to it) included
            self._delete_all(staging, self.listing(staging), 'cleanup')
            if self._delete_container(staging):
                break
        else:
            raise MigrationError('%s keeps getting objects' % staging)
        try:
            self.conn.delete_object(JOURNAL_CONTAINER, 'journal/' + container)
        except ClientException as err:
            if _status(err) != 404:
                raise

    def _forget_journal_container(self):
        """Delete the journal container unless it holds another
        container's journal or lock.  It carries the mark, so one left
        behind refuses the tenant's own writes to it (and its deletion).
        This run's lock is released by now, so it is not checked."""
        self._delete_container(JOURNAL_CONTAINER, check_lock=False)

    # --- objects ---------------------------------------------------------

    def _head_object(self, container, name, query=RAW_QUERY):
        return _lower(self.conn.head_object(container, name,
                                            query_string=query))

    def copy_object(self, source, dest, name, role=COPY):
        """Copy one object server side, dated by its version, and verify
        the copy: ``(outcome, the source's version)``.  COPIED; GONE, the
        source is (deleted, or expired meanwhile); NEWER, ``dest`` holds a
        client's later write or tombstone, which Swift keeps.  Into a
        staging container, where only the move writes, a later write is
        an error: a proxy that does not keep the move's X-Timestamp."""
        try:
            raw = self._head_object(source, name)
        except ClientException as err:
            if _status(err) == 404:
                return GONE, None
            raise
        version = raw['x-timestamp']
        kind = kind_of(raw)
        plain = self._head_object(source, name, None) \
            if kind == 'slo' else None
        path = urllib.parse.quote('/%s/%s' % (source, name))
        self.lock.check()
        self.conn.put_object(dest, name, b'', content_length=0,
                             headers={'X-Copy-From': path,
                                      'X-Timestamp': stamp(
                                          version, self.base, role)},
                             query_string=copy_query(kind))
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
            copy_raw = self._head_object(dest, name)
        except ClientException as err:
            if _status(err) == 404:
                return NEWER  # a client's tombstone
            raise
        if Timestamp(copy_raw['x-timestamp']) > Timestamp(version):
            return NEWER
        copy_plain = self._head_object(dest, name, None) \
            if kind == 'slo' else None
        wrong = mismatches(found, fingerprint(copy_raw, copy_plain))
        if wrong:
            raise MigrationError('the copy of %s/%s in %s differs in %s' % (
                source, name, dest, ', '.join(wrong)))
        return COPIED

    def delete_object(self, container, name, version, role=DELETE):
        """Delete ``version`` of an object: DELETED; ABSENT (nothing to
        delete, or a later tombstone); NEWER (a later version, kept)."""
        self.lock.check()
        try:
            self.conn.delete_object(container, name, headers={
                'X-Timestamp': stamp(version, self.base, role)})
        except ClientException as err:
            if _status(err) == 404:
                return ABSENT
            if _status(err) == 409:
                return NEWER
            raise
        return DELETED

    def _parallel(self, work, entries, what):
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

    def _copy_passes(self, source, dest, todo_now, what, still, summary,
                     counted, later=None):
        """Copy what ``todo_now()`` lists from source to dest until it
        lists nothing, at most PASSES times, adding each pass's copies to
        ``summary[counted]`` and the names that lost to a client's later
        write to ``later``.  ``still(left)``: the error's start, given the
        number of objects left."""
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
            copies = self._copy_all(source, dest, in_copy_order(todo), what)
            for name, (outcome, _version) in copies.items():
                if outcome == COPIED:
                    summary[counted] += 1
                elif outcome == NEWER:
                    later.add(name)

    def _copy_all(self, source, dest, entries, what):
        return self._parallel(lambda name: self.copy_object(
            source, dest, name), entries, '%s: %s' % (source, what))

    def _delete_all(self, container, entries, what):
        """Delete the listed versions of ``entries``; how many went."""
        versions = {e['name']: listed_version(e) for e in entries}
        deletes = self._parallel(lambda name: self.delete_object(
            container, name, versions[name]), entries,
            '%s: %s' % (container, what))
        return sum(1 for result in deletes.values() if result == DELETED)

    def _delete_container(self, container, check_lock=True):
        """Delete an emptied container, waiting while its object count
        catches up with the deletes (Swift answers 409 meanwhile); False if
        it lists objects: the caller decides what becomes of them."""
        for attempt in range(self.delete_retries):
            if check_lock:
                self.lock.check()
            try:
                self.conn.delete_container(container)
                return True
            except ClientException as err:
                if _status(err) == 404:
                    return True
                if _status(err) != 409:
                    raise
            if self.listing(container):
                return False
            self.sleep(min(5.0, 0.5 * (attempt + 1)))
        raise MigrationError('%s is empty but Swift still counts objects '
                             'in it: run again later' % container)


# --- the command ----------------------------------------------------------

def command(args, table, progress):
    """``swift-mass migrate plan|run|abort``: the result for --json."""
    auth_url, user, key = client.credentials(args)
    url, connect = client.tenant_connector(auth_url, user, key, args.tenant)
    conn = connect()
    info = conn.get_capabilities()
    if args.action != 'plan' and 'mass_migrate' not in info:
        raise MigrationError(
            'the proxy at %s does not run a mass filter that refuses '
            'writes to containers being moved (no mass_migrate in /info); '
            'moving now could lose writes' % url)
    target, why = resolve_target(args.tenant, table, args.policy,
                                 info.get('swift', {}).get('policies', []))
    containers = args.containers
    if not containers:
        # every container but the migration's own
        containers = [c['name'] for c in conn.get_account(
            full_listing=True)[1] if not is_ours(c['name'])]
    migrator = Migrator(connect, target, progress, workers=args.concurrency,
                        settle=args.settle, lock_ttl=args.lock_ttl)
    if not args.containers:
        # a move under way whose container is gone for the moment
        containers += sorted(set(migrator.journals()) - set(containers))
    result = {'tenant': args.tenant, 'target': target, 'why': why,
              'containers': []}
    if args.action == 'abort' and not args.containers:
        # only the moves under way
        containers = migrator.journals()
    for container in containers:
        if args.action == 'plan':
            result['containers'].append(migrator.plan(container))
            continue
        progress('%s: starting' % container)
        summary = getattr(migrator, args.action)(container)
        progress('%s: %s' % (container, summary['status']))
        result['containers'].append(summary)
    return result


def text(result):
    """The plain-text form of :func:`command`'s result."""
    lines = ['tenant %s -> %s (%s)' % (result['tenant'], result['target'],
                                       result['why'])]
    rows = result['containers']
    if rows and 'move' in rows[0]:
        lines.append('%-32s %-10s %-10s %9s %14s  %s' % (
            'container', 'policy', 'target', 'objects', 'bytes', 'move'))
        for row in rows:
            lines.append('%-32s %-10s %-10s %9d %14d  %s' % (
                row['container'], row['policy'], row['target'],
                row['objects'], row['bytes'], row['move']))
    else:
        for row in rows:
            lines.append('%s: %s (%s -> %s; copied %d, deleted %d, '
                         'restored %d, kept newer %d, dropped %d, %ss)' % (
                             row['container'], row['status'],
                             row.get('from'), row.get('to'),
                             row['copied'], row['deleted'],
                             row['restored'], row['kept_newer'],
                             row.get('dropped', 0), row.get('seconds')))
    return '\n'.join(lines)


def progress(message):
    print('swift-mass migrate: %s' % message, file=sys.stderr, flush=True)


def run(args):
    """``swift-mass migrate``: the target from --policy, else from the
    tenant's entry in the policy table of the shared store (--conf)."""
    if args.policy:
        return output.emit(args, lambda: command(args, {}, progress), text)
    from swift_mass.cli import control
    return control.with_store(args, lambda conf, store, settings: command(
        args, store.get_table()[1], progress), text)


def add_parsers(subparsers):
    """Register ``migrate plan``, ``migrate run`` and ``migrate abort``."""
    p = subparsers.add_parser('migrate', help='move a tenant\'s containers '
                              'to its substore (plan: show what would move)')
    actions = p.add_subparsers(dest='action', required=True)
    helps = {'plan': 'show what would move',
             'run': 'move (or finish moving) containers',
             'abort': 'stop moves under way and give the containers back '
                      '(before emptying: as they were; after: restored)'}
    for action in ('plan', 'run', 'abort'):
        p = actions.add_parser(action, help=helps[action])
        p.add_argument('tenant', help='the account, e.g. AUTH_test')
        p.add_argument('containers', nargs='*', metavar='container',
                       help='default: all of the tenant\'s containers')
        p.add_argument('--policy', help='target storage policy (default: '
                       'the substore of the tenant\'s Mass policy, from '
                       'the shared store of --conf)')
        client.add_options(p)
        p.add_argument('--concurrency', type=int, default=8)
        p.add_argument('--settle', type=float, default=60.0,
                       help='seconds between marking a container and its '
                       'last listing, for writes in flight and cached '
                       'container info (default 60)')
        p.add_argument('--lock-ttl', type=int, default=30,
                       help='seconds the lock of a killed run lasts')
        p.set_defaults(func=run)
