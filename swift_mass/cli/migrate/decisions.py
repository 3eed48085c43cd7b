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
"""The pure decisions of ``swift-mass migrate``
(:mod:`swift_mass.cli.migrate`): functions with no I/O, so that they can be
tested without a cluster, and the names the move's modules share."""
import collections

from swift.common.utils import Timestamp

from swift_mass import tags

JOURNAL_CONTAINER = '.mass-migrate'
STAGING_PREFIX = tags.STAGING_PREFIX
staging_name = tags.staging_name
MARK_HEADER = tags.MIGRATING_MARK_HEADER
PHASES = ('copy', 'empty', 'restore', 'cleanup')
# copy passes before a phase gives up on objects it cannot copy
PASSES = 3
# seconds the empty phase waits for the container's listing to drop the rows
# of the objects it deleted (EmptyPhase._delete_emptied): an update a busy
# container server did not take in time waits in an async pending on the
# object's node, and Swift's object-updaters sweep those every 300 s by
# default ([object-updater] interval)
UPDATES_WAIT = 600.0
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
# to its base (:func:`stamp_base`): a copy, the fence (a POST) and the
# delete of the version copied, a probe of what a client did to an object
# (EmptyPhase._settle) and its removal, the removal of a fence that a
# killed run left (``migrate abort``), and the restore's copy into C.
# Within a run each sorts after the one before it; a later run's base is
# greater than all of an earlier run's offsets (each is below ROLES).  The
# restore sorts last: the object servers record the newest write of each
# object, whatever the policy, and the proxy cache fills no body dated
# before it, so a restore dated before the run's own fence and delete of
# the object in C's old policy would not be cached until that record
# expired (a day).
COPY, FENCE, DELETE, PROBE, UNPROBE, UNFENCE, RESTORE = 1, 2, 3, 4, 5, 6, 7
ROLES = 8
# A fence's X-Delete-At (:func:`fence_delete_at`): after any expiry a client
# means (the year 2255), below the greatest Swift keeps (10 digits).
FENCE_DELETE_AT_FLOOR = 9000000000
FENCE_DELETE_AT_CEILING = 9999999999
# the content type of a probe, a zero-byte object
PROBE_TYPE = 'application/x-mass-migrate-probe'
# On the writes to C that leave what a reader of an object sees as it was
# (the fence, the DELETE of the fenced version, whose copy S holds, the
# removal of a fence, the restore of S's copy): the object servers bump no
# generation for them, so the proxies' cached bodies stay hits through the
# move (docs/cache.md, "A move keeps cached bodies").  Not on a probe: it
# is made where a client wrote.
KEEPS_VERSION = {tags.KEEPS_VERSION_REQUEST_HEADER: 'true'}
# what copy_object and delete_object found; CHANGED: a client wrote the
# object after the version to delete, metadata included (its fence or
# its DELETE was refused)
COPIED, GONE, NEWER, DELETED, ABSENT, CHANGED = (
    'copied', 'gone', 'newer', 'deleted', 'absent', 'changed')

# What an object POST replaces besides user metadata (the object servers'
# default ``allowed_headers``), without X-Delete-At, which a fence sets, and
# X-Static-Large-Object, which a POST cannot change; a fence sends them
# again as HEAD shows them.  Content-Type is left out: a POST without one
# keeps the object's.
POSTED_HEADERS = ('content-disposition', 'content-encoding',
                  'x-object-manifest', 'cache-control', 'content-language',
                  'expires', 'x-robots-tag')

# Object headers a copy must carry over unchanged, apart from user metadata.
COMPARED_HEADERS = ('content-type', 'content-disposition', 'content-encoding',
                    'x-delete-at', 'x-object-manifest',
                    'x-static-large-object', 'x-symlink-target',
                    'x-symlink-target-account', 'x-symlink-target-etag')


class MigrationError(Exception):
    pass


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

    ``option`` (``--policy``) wins; otherwise the substore of the
    tenant's Mass policy (``table``: ``{tenant: PolicyEntry}``; '' meaning
    the default policy).  The name is checked against the cluster's
    policies (``/info``)."""
    names = [p['name'] for p in policies]
    if option:
        why = '--policy'
        name = option
    else:
        entry = table.get(tenant)
        if entry is None:
            raise MigrationError(
                '%s has no Mass policy (swift-mass tenants); give --policy'
                % tenant)
        if entry.opted_out:
            # its entry only says Mass leaves it alone: no substore
            raise MigrationError(
                '%s is opted out of Mass (swift-mass explain); give --policy'
                % tenant)
        name = entry.substore or default_policy(policies)
        why = 'Mass policy: class %s, substore %r' % (
            entry.cls, entry.substore)
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


def fence_delete_at(base):
    """The X-Delete-At of a run's fences (offsets ``base``): one the run's
    own (from its start, to the microsecond), so that a client's POST that
    sets an X-Delete-At never sets it."""
    return FENCE_DELETE_AT_FLOOR + (base // ROLES) % (
        FENCE_DELETE_AT_CEILING - FENCE_DELETE_AT_FLOOR)


def fence_headers(headers, delete_at):
    """The headers of a POST that leaves an object's metadata as HEAD
    showed it (``headers``, lower-case) but for its X-Delete-At,
    ``delete_at`` (None: none).  A POST replaces all of them."""
    posted = {key: value for key, value in headers.items()
              if key.startswith('x-object-meta-') or key in POSTED_HEADERS}
    if delete_at is not None:
        posted['x-delete-at'] = str(delete_at)
    return posted


def is_fenced(current, staged):
    """Whether an object of C (``current``, its HEAD headers, lower-case)
    still holds a killed run's fence: dated as the staged copy
    (``staged``) is, which a client's write never is, and expiring when
    the staged copy does not."""
    return Timestamp(current['x-timestamp']) == Timestamp(
        staged['x-timestamp']) and \
        current.get('x-delete-at') != staged.get('x-delete-at')


def listed_version(entry):
    """The version of a listing entry (as HEAD shows its X-Timestamp)."""
    return Timestamp.from_isoformat(entry['last_modified']).normal


#: A DELETE a run made of an object of C: the version it deleted and the
#: role (offset) of its X-Timestamp (DELETE, or UNPROBE: a probe's removal)
Deletion = collections.namedtuple('Deletion', 'version role')


def written_since(entries, deleted):
    """The listing entries that are not rows of objects this run deleted
    (``deleted``: {name: its :data:`Deletion`}): a row of one, dated at or
    before the version deleted, is a replica that has not had the delete
    yet; any other row is an object written since."""
    return [e for e in entries if e['name'] not in deleted or
            Timestamp(listed_version(e)) >
            Timestamp(deleted[e['name']].version)]


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


def http_status(err):
    """The HTTP status of a swiftclient ClientException, or None."""
    return getattr(err, 'http_status', None)
