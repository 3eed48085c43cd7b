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
"""What one object-server worker of ``mass_queue``
(:class:`swift_mass.obj.middleware.MassQueueMiddleware`) reports of its
queues: its report in the recon cache, written every ``stats_interval``
from its first request on, and the answer to ``GET /mass_queue``, with its
server's other workers' reports read back from the recon cache
(:class:`WorkerReports`).
"""
import errno
import os
import time

import eventlet

from swift.common.utils import dump_recon_cache, load_recon_cache

# Under the object server's recon_cache_path, beside Swift's own
# object.recon: every worker's queues, keyed by its pid.
RECON_FILE = 'mass_queue.recon'
# A report this many stats_interval old is from a worker that stopped
# writing (hung, or of a server since reconfigured); one interval late is
# a busy hub.
STALE_INTERVALS = 2


class WorkerReports(object):
    """This worker's ``queues`` (:class:`swift_mass.obj.queues.DeviceQueues`)
    and, in observe mode, what they would have seen (``observed``,
    :class:`swift_mass.obj.queues.ObservedDevices`), reported: to the recon
    cache every ``stats_interval`` (:meth:`start`), and with the settings
    of ``conf`` (a :class:`swift_mass.conf.QueueConf`) and every worker's
    report to ``GET /mass_queue`` (:meth:`status`).

    :param spawn: starts the green thread that writes the reports
    :param sleep: what that thread sleeps with between two reports
    """

    def __init__(self, conf, queues, observed, logger,
                 spawn=eventlet.spawn_n, sleep=eventlet.sleep):
        self.conf = conf
        self.queues = queues
        self.observed = observed
        self.logger = logger
        self.recon_file = os.path.join(conf.recon_cache_path, RECON_FILE)
        self.spawn = spawn
        self.sleep = sleep
        # the process whose reports run, and the port its requests came to
        self._reporting_pid = None
        self.port = None

    def start(self, port):
        """Write this worker's queues every stats_interval, from this
        process's first request on (which came to ``port``)."""
        # Not from __init__: Swift's parent process loads the app only to
        # check the config and never serves (and with workers = 0 the
        # serving process loads it twice); a report from an app that serves
        # nothing would count as a worker.
        pid = os.getpid()
        if self._reporting_pid == pid:
            return
        self._reporting_pid = pid
        # The port the server listens on: the servers of one node (under
        # servers_per_port, its ports; or a replication server) share
        # recon_cache_path, and the CLI asks each port for its own.
        self.port = port
        self.spawn(self._report_forever, pid)

    def status(self):
        """The answer to ``GET /mass_queue``: the queues' settings, this
        worker's queues (in observe mode, what they would have seen) and
        every report of its server's workers (``workers``,
        ``urgent_seen_all``); this worker's own report written first."""
        conf = self.conf
        own = self._state()
        self._report(own)
        workers = self._workers(own)
        urgent_seen_all = set()
        for report in workers.values():
            urgent_seen_all.update(report['urgent_seen'])
        return {
            'mode': conf.mode,
            'slots_per_device': conf.slots_per_device,
            'batch_slots': conf.batch_slots,
            'deadline': conf.deadline,
            'max_refusals_per_minute': conf.max_refusals_per_minute,
            'urgent_tenants': sorted(conf.urgent_tenants),
            'urgent_seen': sorted(self.queues.urgent_seen),
            'adaptive_slots': conf.adaptive_slots,
            'devices': self.queues.stats(),
            'observed': self.observed.stats(),
            'stats_interval': conf.stats_interval,
            'workers': workers,
            'urgent_seen_all': sorted(urgent_seen_all),
        }

    def _report_forever(self, pid):
        # A worker forked after this thread began inherits it: the
        # worker's own app reports under its pid, this one stops.
        while os.getpid() == pid:
            self.sleep(self.conf.stats_interval)
            if os.getpid() != pid:
                return
            try:
                self._report()
            except Exception:
                # dump_recon_cache logs its own; this is a stats() bug,
                # which must not end the reports
                self.logger.exception('mass_queue: report failed')

    def _state(self):
        """This worker's report."""
        return {
            'time': time.time(),
            'port': self.port,
            'devices': self.queues.stats(),
            'urgent_seen': sorted(self.queues.urgent_seen),
        }

    def _report(self, state=None):
        dump_recon_cache({str(os.getpid()): state or self._state()},
                         self.recon_file, self.logger)

    def _workers(self, own):
        """``{pid: report}`` of this server's workers: ``own`` (this
        worker's, whether or not its write got through), and every other
        report of this port younger than STALE_INTERVALS x stats_interval
        from a process that lives.  Reports of processes gone are removed
        from the file."""
        try:
            reports = load_recon_cache(self.recon_file)
        except (OSError, ValueError) as err:
            self.logger.warning('mass_queue: cannot read %s: %s',
                                self.recon_file, err)
            reports = {}
        oldest = own['time'] - STALE_INTERVALS * self.conf.stats_interval
        workers, gone = current_reports(reports, self.port, oldest)
        workers[str(os.getpid())] = own
        if gone:
            # {} removes a key in dump_recon_cache, as the replicator
            # clears the stats of devices it no longer has
            dump_recon_cache(dict((pid, {}) for pid in gone),
                             self.recon_file, self.logger)
        return dict((pid, {'time': report.get('time'),
                           # dump_recon_cache drops an empty dict
                           'devices': report.get('devices') or {},
                           'urgent_seen': report.get('urgent_seen') or []})
                    for pid, report in workers.items())


def process_lives(pid):
    """Whether process ``pid`` exists (the recon file outlives the
    workers that wrote it)."""
    try:
        os.kill(pid, 0)
    except OSError as err:
        # EPERM: it exists, run by another user
        return err.errno != errno.ESRCH
    return True


def current_reports(reports, port, oldest, lives=process_lives):
    """``(workers, gone)`` of the recon file's ``reports`` (``{pid:
    report}``, as read): ``workers`` the ``{pid: report}`` of the server
    listening on ``port`` written at ``oldest`` or later by a process that
    lives, ``gone`` the pids (of any port) of processes that do not.  What
    is not a worker's report is in neither.

    :param lives: whether a process lives, given its pid (an int)
    """
    workers, gone = {}, []
    for pid, report in (reports if isinstance(reports, dict)
                        else {}).items():
        if not isinstance(report, dict) or not pid.isdigit():
            continue
        if not lives(int(pid)):
            gone.append(pid)
        elif report.get('port') == port and \
                report.get('time', 0) >= oldest:
            workers[pid] = report
    return workers, gone
