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
"""tools/bench-scale's synthetic tenants (mass_bench.scale): their names
and workloads, the requests of an interval spread over them (every tenant,
or a Zipf tail), the counter deltas each request adds to a worker's window
(the real monitor.request_counts), and a policy table that knows them all.
Runs in the benchmark's process, against the real control loop."""
import collections
import itertools


def zipf_weights(n, s):
    """The cumulative weights of a Zipf law over ranks 1..n (exponent
    ``s``): what random.choices takes as cum_weights."""
    return list(itertools.accumulate(1.0 / (rank ** s)
                                     for rank in range(1, n + 1)))


def spread(kind, tenants, rng, cum_weights=None, per_tenant=10):
    """``{tenant index: requests}`` of one interval: ``worst``, every
    tenant ``per_tenant``; ``realistic``, ``tenants // 2`` requests drawn
    by the Zipf law of ``cum_weights`` (busiest first), the tenants' ranks
    shuffled by ``rng``."""
    if kind in ('worst', 'worst-new'):
        return dict.fromkeys(range(tenants), per_tenant)
    if cum_weights is None or len(cum_weights) != tenants:
        raise ValueError('realistic needs the cumulative weights of '
                         '%d tenants' % tenants)
    ranks = rng.choices(range(tenants), cum_weights=cum_weights,
                        k=max(1, tenants // 2))
    return dict(collections.Counter(ranks))


def tenant_name(index):
    return 'AUTH_%08x' % index


def profile(index):
    """A tenant's workload: reader, writer or mixed (by its index)."""
    return ('read', 'read', 'write', 'mixed')[index % 4]


REQUESTS = None


def request_kinds():
    """The counter deltas of a few requests of each workload (the real
    monitor.request_counts), drawn from for every simulated request."""
    global REQUESTS
    if REQUESTS is None:
        from swift_mass.control import monitor
        get = [monitor.request_counts('GET', 200, 0, 4096, ms / 1000.0, 4096)
               for ms in (2, 4, 8, 15, 40)]
        put = [monitor.request_counts('PUT', 201, 4096, 0, ms / 1000.0, 4096)
               for ms in (8, 20, 60)]
        head = [monitor.request_counts('HEAD', 204, 0, 0, 0.002)]
        REQUESTS = {'read': get * 4 + head + put[:1],
                    'write': put * 6 + get[:1],
                    'mixed': get + put + head}
    return REQUESTS


def record(agent, requests, rng):
    """Each tenant's requests of ``requests`` ({index: count}) recorded
    in the agent's window, as the proxy does per request."""
    kinds = request_kinds()
    for index, count in requests.items():
        tenant = tenant_name(index)
        choices = kinds[profile(index)]
        for _ in range(count):
            agent.record(tenant, choices[rng.randrange(len(choices))])


def known_table(tenants, now, settings):
    """An entry for every tenant, decided an hour ago and validated."""
    from swift_mass.control import controller
    table = {}
    for index in range(tenants):
        entry = controller.new_entry(profile(index), settings, now - 3600,
                                     'bench-scale')
        entry.validated = True
        table[tenant_name(index)] = entry
    return table
