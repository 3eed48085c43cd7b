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
"""The journal of a move under way, ``.mass-migrate/journal/<C>``: what a
run of ``swift-mass migrate`` needs to go on where the last one stopped."""
import json

from swift_mass.cli.migrate.decisions import (
    JOURNAL_CONTAINER, PHASES, MigrationError, is_saved_header, mark_value,
    staging_name)


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
