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
"""The benchmark's load generator: the tenants, their clients and the
HTTP they speak to the proxy.

A tenant (``Tenant``) is a tempauth user and the workload its clients run
(``mass_bench.workloads``).  In a run each tenant's clients run in a
process of their own (``tenant_process``), so that clients of different
tenants do not share one interpreter lock, with one thread and one
keep-alive connection (``Connection``) per client, speaking Swift's API
(``SwiftApi``) or S3 (``S3Api``, through Swift's s3api) as the workload
says.  A client (``client``)
issues the operations its workload draws until the window's end and then
waits for its last answer; reads, deletes and overwrites pick a name of
its ``ObjectSet`` by the workload's popularity (uniform: each client its
own slice of the names; Zipf: one set shared by the tenant's clients, so
that all of them find the same objects hot).  Per request a client
records when it began, its latency, status, bytes and how Mass answered
a GET (:func:`served_by`; None where its API cannot tell, as through
s3api); ``mass_bench.summary`` makes figures of these
rows.  The process measures its own CPU seconds over the window
(``cpu_between``): the bench adds them up as the load generator's.

``mass_bench.bench`` seeds the containers and starts the processes.
"""
import http.client
import os
import threading
import time
import urllib.parse

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from swiftclient.client import get_auth

from mass_bench import resources, workloads

ERROR = 599  # status recorded for a request that got no answer


class Tenant(object):
    """A tempauth user and the workload its clients run."""

    def __init__(self, label, user, key, workload):
        self.label, self.user, self.key = label, user, key
        self.workload = workload
        self.url = self.token = None

    @classmethod
    def parse(cls, text):
        """``ACCOUNT:USER:KEY=WORKLOAD``, e.g. ``photos:web:web=A,
        concurrency=4``; the label is the account name."""
        who, sep, spec = text.partition('=')
        parts = who.split(':')
        if not sep or len(parts) != 3 or not all(parts):
            raise ValueError('%r: expected ACCOUNT:USER:KEY=WORKLOAD' % text)
        account, user, key = parts
        return cls(account, '%s:%s' % (account, user), key,
                   workloads.parse(spec))

    @classmethod
    def reseller(cls, text):
        """A reseller admin, ``ACCOUNT:USER:KEY``: a Tenant with no
        workload."""
        parts = text.split(':')
        if len(parts) != 3 or not all(parts):
            raise ValueError('%r: expected ACCOUNT:USER:KEY' % text)
        return cls(parts[0], '%s:%s' % tuple(parts[:2]), parts[2], None)

    def authenticate(self, auth_url):
        self.url, self.token = get_auth(auth_url, self.user, self.key)

    @property
    def account(self):
        return urllib.parse.unquote(self.url.rstrip('/').rsplit('/', 1)[1])


class Connection(object):
    """One keep-alive HTTP connection to the proxy, reopened after an
    error."""
    # Not swiftclient's: a client here times one request as the proxy
    # answers it, with no retry, re-authentication or body held in memory.

    def __init__(self, url, timeout=60):
        parsed = urllib.parse.urlsplit(url)
        self.netloc, self.base = parsed.netloc, parsed.path
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, headers, body=None):
        """(status, headers, body length); ERROR when no answer came."""
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(
                    self.netloc, timeout=self.timeout)
            self.conn.request(method, self.base + path, body=body,
                              headers=headers)
            resp = self.conn.getresponse()
            length = 0
            while True:
                chunk = resp.read(65536)
                if not chunk:
                    break
                length += len(chunk)
            return resp.status, {k.lower(): v for k, v in
                                 resp.getheaders()}, length
        except (OSError, http.client.HTTPException):
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            return ERROR, {}, 0


class SwiftApi(object):
    """A tenant's requests in Swift's API: its token, on its storage URL
    (or ``url``, another proxy's same path)."""

    # Mass's X-Mass-Cache and X-Mass-Merge reach a Swift-API client
    tells_how_mass_answered = True

    def __init__(self, tenant, url=None):
        self.conn = Connection(url or tenant.url)
        self.token = tenant.token

    def request(self, method, container, name=None, body=None,
                headers=None):
        """:meth:`Connection.request` of the container or an object."""
        headers = dict(headers or {}, **{'X-Auth-Token': self.token})
        return self.conn.request(method, object_path(container, name),
                                 headers, body)


class S3Api(object):
    """A tenant's requests as an S3 client sends them to Swift's s3api:
    path-style ``/BUCKET/KEY`` at the root of the proxy of its storage URL
    (or of ``url``), signed with AWS SigV4 by botocore, tempauth's user
    (``account:user``) as the access key and its key as the secret."""

    # s3api passes on only the headers S3 defines, so an S3 client cannot
    # tell a hit from a miss: its GETs' rows say None (unknown), not ''
    tells_how_mass_answered = False

    def __init__(self, tenant, url=None):
        parsed = urllib.parse.urlsplit(url or tenant.url)
        self.root = '%s://%s' % (parsed.scheme, parsed.netloc)
        self.conn = Connection(self.root)
        self.auth = S3SigV4Auth(Credentials(tenant.user, tenant.key), 's3',
                                S3_REGION)

    def request(self, method, container, name=None, body=None,
                headers=None):
        path = object_path(container, name)
        signed = AWSRequest(method=method, url=self.root + path,
                            headers=dict(headers or {}), data=body or b'')
        self.auth.add_auth(signed)
        return self.conn.request(method, path, dict(signed.headers.items()),
                                 body)


def object_path(container, name=None):
    path = '/' + urllib.parse.quote(container)
    return path + '/' + urllib.parse.quote(name) if name else path


# the region s3api answers for by default (its `location`)
S3_REGION = 'us-east-1'
APIS = {'swift': SwiftApi, 's3': S3Api}


class ObjectSet(object):
    """The names of the objects clients read, overwrite and delete, in
    popularity order (for Zipf: the first is rank 1); clients of one
    tenant may share one set."""

    def __init__(self, names):
        self.names = list(names)
        self.lock = threading.Lock()

    def __len__(self):
        return len(self.names)

    def draw(self, chooser):
        """A name picked by the chooser's popularity; None when empty."""
        with self.lock:
            if not self.names:
                return None
            return self.names[chooser.index(len(self.names))]

    def add(self, name):
        with self.lock:
            self.names.append(name)

    def discard(self, name):
        with self.lock:
            if name in self.names:
                self.names.remove(name)


def client_sets(workload, names):
    """Each client's ObjectSet: with uniform popularity its own slice of
    the names (as before popularity existed), with Zipf one set for all,
    so that every client finds the same objects hot."""
    if workload.zipf is None:
        return [ObjectSet(names[i::workload.concurrency])
                for i in range(workload.concurrency)]
    return [ObjectSet(names)] * workload.concurrency


def served_by(headers):
    """How Mass answered a GET (its response ``headers``, lower-case):
    ``X-Mass-Cache`` (``hit``, ``miss``...), else ``merged`` where merge's
    single flight gave it another read's answer (``X-Mass-Merge``), else
    ''."""
    cache = headers.get('x-mass-cache', '').lower()
    if cache:
        return cache
    return headers.get('x-mass-merge', '').lower()


def client(tenant, workload, container, objects, seed, start, stop_at, out):
    """One client: operations as the workload draws them, until stop_at
    (or workload.operations of them); appends (offset from start,
    operation, latency s, status, bytes, :func:`served_by` of a GET or '') to
    out.  PUTs create new objects (added to ``objects``) or, with
    workload.overwrite, rewrite one of ``objects``."""
    chooser = workloads.Chooser(workload, seed)
    api = APIS[workload.api](tenant)
    body_cache = {}
    made = 0
    limit = workload.operations
    done = 0
    while time.time() < stop_at and not (limit and done >= limit):
        op = chooser.operation(have_objects=bool(objects))
        name = None
        if op != 'PUT' or workload.overwrite:
            name = objects.draw(chooser)
            if name is None:
                op = 'PUT'  # another client deleted the last one
        new = name is None
        if op == 'PUT':
            size = chooser.size()
            body = body_cache.get(size)
            if body is None:
                body = body_cache[size] = os.urandom(size)
            if new:
                name = 'c%d-%d' % (seed, made)
                made += 1
        else:
            body, size = None, 0
        began = time.time()
        status, answer, length = api.request(op, container, name, body)
        latency = time.time() - began
        if op == 'PUT' and new and status // 100 == 2:
            objects.add(name)
        elif op == 'DELETE' and status // 100 == 2:
            objects.discard(name)
        served = ''
        if op == 'GET':
            served = served_by(answer) if api.tells_how_mass_answered \
                else None
        out.append((began - start, op, latency, status,
                    size if op == 'PUT' else length, served))
        done += 1


def sleep_until(moment):
    delay = moment - time.time()
    if delay > 0:
        time.sleep(delay)


def cpu_between(begin, end, out):
    """Append to ``out`` this process's CPU seconds (all its threads)
    from time ``begin`` to ``end``."""
    sleep_until(begin)
    before = resources.own_cpu_seconds()
    sleep_until(end)
    out.append(resources.own_cpu_seconds() - before)


def tenant_process(tenant, workload, container, names, start, stop_at,
                   results, index, measured_from=None):
    """All of one tenant's clients, in their own process so that clients
    of different tenants do not share one interpreter lock; puts (label,
    rows, the process's CPU seconds from ``measured_from`` to
    ``stop_at``, the names of the objects its clients' sets hold at the
    end: the next phase of a phased run reads those) on ``results``."""
    sets = client_sets(workload, names)
    outs = [[] for _ in range(workload.concurrency)]
    threads = [threading.Thread(target=client, args=(
        tenant, workload, container, sets[i], index * 1000 + i,
        start, stop_at, outs[i])) for i in range(workload.concurrency)]
    cpu = []
    threads.append(threading.Thread(target=cpu_between, args=(
        start if measured_from is None else measured_from, stop_at, cpu)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((tenant.label, [row for out in outs for row in out],
                 cpu[0], held_names(sets)))


def held_names(sets):
    """The names the object sets hold, each once, in their order (the
    clients of a Zipf workload share one set)."""
    names = {}
    for objects in {id(s): s for s in sets}.values():
        names.update(dict.fromkeys(objects.names))
    return list(names)
