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
"""The reaction time of a phased run (docs/benchmarks/adaptation): the
seconds from a phase's start until the tenant's new policy {class,
substore, method} is in force on every proxy worker, read from the
workers themselves rather than assumed from ``interval``.

:class:`WorkerProbe` asks the proxy, as a reseller admin, which policy the
worker that answers applies to each tenant (an account HEAD with
``X-Mass-Policy: true``: swift_mass.proxy.policy_in_force), a few times a
second over new connections, so that every worker answers some; a sample
is ``{tenant label: {worker pid: [class, substore, method, table
version]}}``.  :func:`reaction` reads a phase's samples: the policy most
workers apply at its end is its new policy; the reaction time is when
every worker that answered from then on applied it, and stayed so.  Runs
in the benchmark's process, against the SAIO.
"""
import http.client
import urllib.parse

from swift_mass import tags


class WorkerProbe(object):
    """Asks the proxy at ``url`` (a storage URL's scheme and host) which
    policy its workers apply to ``accounts`` ({label: account}), with a
    reseller admin's ``token``, ``asks`` times per tenant a sample."""

    def __init__(self, url, token, accounts, asks=4, timeout=2.0):
        parsed = urllib.parse.urlsplit(url)
        self.netloc = parsed.netloc
        self.token = token
        self.accounts = accounts
        self.asks = asks
        self.timeout = timeout

    def sample(self):
        """``{label: {pid: [class, substore, method, version]}}`` of the
        workers that answered now."""
        out = {}
        for label, account in self.accounts.items():
            seen = out[label] = {}
            for _ in range(self.asks):
                answer = self.ask(account)
                if answer is not None:
                    pid, policy = answer
                    seen[pid] = policy
        return out

    def ask(self, account):
        """``(pid, [class, substore, method, version])`` of one worker,
        or None if none answered so."""
        # a new connection each time: the kernel hands it to any worker
        conn = http.client.HTTPConnection(self.netloc, timeout=self.timeout)
        try:
            conn.request('HEAD', '/v1/' + urllib.parse.quote(account),
                         headers={'X-Auth-Token': self.token,
                                  tags.POLICY_REQUEST_HEADER: 'true'})
            resp = conn.getresponse()
            resp.read()
            pid = resp.getheader(tags.WORKER_RESPONSE_HEADER)
            value = resp.getheader(tags.POLICY_RESPONSE_HEADER)
            version = resp.getheader(tags.TABLE_VERSION_RESPONSE_HEADER)
            if resp.status != 200 or not pid or value is None:
                return None
            return pid, list(tags.parse_policy_value(value)) + [
                int(version or 0)]
        except (OSError, http.client.HTTPException, ValueError):
            return None
        finally:
            conn.close()


def reaction(samples, label, start, end):
    """A tenant's reaction in the phase ``[start, end)`` (offsets of
    ``samples``, ``[[offset, sample]]`` as :meth:`WorkerProbe.sample`
    makes them): ``{'policy': [class, substore, method] most workers
    apply at the phase's end, 'changed': whether some worker applied
    another at its start, 'seconds': from ``start`` until every worker
    that answered applied that policy and kept it to the end (0.0 when
    nothing changed), None when they never all did}``; None without a
    sample of the tenant in the phase."""
    phase = [(t, s.get(label) or {}) for t, s in samples
             if start <= t < end and s and s.get(label)]
    if not phase:
        return None
    last = phase[-1][1]
    counts = {}
    for policy in last.values():
        key = tuple(policy[:3])
        counts[key] = counts.get(key, 0) + 1
    target = max(sorted(counts), key=counts.get)
    changed = any(tuple(p[:3]) != target for p in phase[0][1].values())
    settled = None
    for t, workers in reversed(phase):
        if any(tuple(p[:3]) != target for p in workers.values()):
            break
        settled = t
    seconds = None if settled is None else (
        0.0 if not changed else round(settled - start, 2))
    return {'policy': list(target), 'changed': changed, 'seconds': seconds}
