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
"""The Redis tools/bench-scale (mass_bench.scale) measures against, and
what a piece of work costs there: a redis-server of the run's own on a
free port (or keys under a prefix of its own in another Redis, deleted
afterwards), the round trips and commands this process sends (Trips,
counted in redis-py) and the commands, bytes and CPU Redis spends
(Meter, from INFO).  Runs in the benchmark's process."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class RedisServer(object):
    """A redis-server of this run's own, on a free port, in the
    foreground of a child process (stopped by its pid)."""

    def __init__(self, binary='redis-server'):
        self.dir = tempfile.mkdtemp(prefix='bench-scale-redis-')
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, '--port', str(self.port), '--bind', '127.0.0.1',
             '--save', '', '--appendonly', 'no', '--dir', self.dir,
             '--logfile', os.path.join(self.dir, 'redis.log')],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = 'redis://127.0.0.1:%d/0' % self.port
        import redis
        client = redis.Redis.from_url(self.url)
        deadline = time.time() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Trips(object):
    """Round trips of every redis-py connection of this process (each
    send of a packed command or pipeline is one), and the commands they
    carried."""

    count = 0
    commands = 0

    @classmethod
    def install(cls):
        from redis.client import Pipeline, Redis
        from redis.connection import AbstractConnection
        send = AbstractConnection.send_packed_command
        command = Redis._execute_command
        pipeline = Pipeline.execute

        def send_packed_command(self, packed, check_health=True):
            cls.count += 1
            return send(self, packed, check_health)

        def execute_command(self, *args, **options):
            cls.commands += 1
            return command(self, *args, **options)

        def execute(self, *args, **kwargs):
            cls.commands += len(self.command_stack)
            return pipeline(self, *args, **kwargs)
        AbstractConnection.send_packed_command = send_packed_command
        Redis._execute_command = execute_command
        Pipeline.execute = execute


class Meter(object):
    """What a piece of work costs: CPU and wall seconds here, and in
    Redis commands run (INFO commandstats, scripts' included), commands
    sent and round trips (Trips), bytes in and out of Redis, Redis CPU
    seconds.  The INFO calls' own cost is taken out."""

    def __init__(self, url):
        import redis
        self.client = redis.Redis.from_url(url, decode_responses=True)

    def _server(self):
        info = self.client.info('all')
        return {
            'commands': sum(v['calls'] for k, v in info.items()
                            if k.startswith('cmdstat_')),
            'bytes_in': info['total_net_input_bytes'],
            'bytes_out': info['total_net_output_bytes'],
            'redis_cpu_s': info['used_cpu_user'] + info['used_cpu_sys'],
        }

    def measure(self, work):
        """``(result, figures)`` of ``work()``."""
        # what an INFO costs, taken just before: INFO's size grows with
        # the kinds of commands Redis has seen
        calibration = self._server()
        before = self._server()
        overhead = {key: before[key] - calibration[key] for key in before}
        trips, sent = Trips.count, Trips.commands
        cpu, wall = time.process_time(), time.time()
        result = work()
        cpu, wall = time.process_time() - cpu, time.time() - wall
        trips, sent = Trips.count - trips, Trips.commands - sent
        after = self._server()
        figures = {key: after[key] - before[key] for key in before}
        for key in ('commands', 'bytes_in', 'bytes_out'):
            figures[key] -= overhead[key]
        figures.update(cpu_s=cpu, wall_s=wall, round_trips=trips,
                       commands_sent=sent)
        return result, figures


def fresh_prefix():
    return 'mass-bench-scale-%s:' % uuid.uuid4().hex[:8]


def delete_prefix(url, prefix):
    import redis
    client = redis.Redis.from_url(url)
    batch = []
    for key in client.scan_iter(match=prefix + '*', count=10000):
        batch.append(key)
        if len(batch) >= 5000:
            client.unlink(*batch)
            batch = []
    if batch:
        client.unlink(*batch)
