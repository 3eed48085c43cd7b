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
"""The control loop's statsd counters: what a worker's flush handed over,
per tenant and per class (:func:`emit_flush`), and how many decisions the
leader made in a tick (:func:`count_decisions`); each a plain statsd
counter and, with labels (:mod:`swift_mass.metrics`), a labeled one too.
"""
import heapq
import re

from swift_mass import metrics
from swift_mass.control import monitor


_STATSD_SAFE = re.compile(r'[A-Za-z0-9_-]*\Z').match


def statsd_name(tenant):
    """A tenant name as one statsd path component ('.', ':', '|', '@' and
    anything outside [A-Za-z0-9_-] would break the line protocol)."""
    if _STATSD_SAFE(tenant):
        return tenant
    return re.sub(r'[^A-Za-z0-9_-]', '_', tenant)


# the counters that go to statsd: operations, errors and bytes
OPS_FIELDS = frozenset('ops.' + op for op in monitor.OPS)
METRIC_FIELDS = OPS_FIELDS | frozenset(
    ['err.' + op for op in monitor.OPS] + ['bytes_in', 'bytes_out'])
# a field's labeled name (after swift_mass_tenant_ or swift_mass_class_)
# and its method label: Swift's label for an HTTP method
LABELED_FIELDS = dict(
    [('ops.' + op, ('requests', op)) for op in monitor.OPS] +
    [('err.' + op, ('errors', op)) for op in monitor.OPS] +
    [('bytes_in', ('bytes_in', None)), ('bytes_out', ('bytes_out', None))])


def emit_flush(logger, pending, table, tenant_metrics):
    """statsd counters per tenant and per class, once per flush
    rather than once per request: mass.tenant.<tenant>.<field> and
    mass.class.<class>.<field> for operations, errors and bytes
    (``pending``: what the flush handed over, ``{(tenant, bucket):
    counts}``).  Every tenant's counts go into its class's, added up:
    one update per class and field; a tenant's own, added up over its
    buckets, only for the ``tenant_metrics`` busiest tenants (most
    requests) when there are more: a statsd packet per counter costs
    a worker some microseconds, and statsd a series.  With labels
    (swift_mass.metrics), each also as swift_mass_tenant_<field> and
    swift_mass_class_<field>, labeled with the tenant, its class and
    the HTTP method.

    ``table``: the worker's policy table ``{tenant: PolicyEntry}``, which
    names each tenant's class (``unknown`` for a tenant without an
    entry); ``tenant_metrics``: None for every tenant.
    """
    classes, tenants, tenant_class = _totals_by_class(pending, table)
    if tenant_metrics is not None and len(tenants) > tenant_metrics:
        tenants = _busiest(tenants, tenant_metrics)
    update_stats = logger.update_stats
    labeled = metrics.labeled_only(logger)
    metric_fields = METRIC_FIELDS.intersection
    for tenant, buckets in tenants.items():
        name = 'tenant.%s.' % statsd_name(tenant)
        total = {}
        for counts in buckets:
            for field in metric_fields(counts):
                total[field] = total.get(field, 0) + counts[field]
        for field, value in total.items():
            update_stats(name + field, value)
        if labeled is not None:
            # the tenant as Swift sends an account label: as it is
            _emit_labeled(labeled, 'tenant_', total, {
                'tenant': tenant, 'class': tenant_class[tenant]})
    for cls, total in classes.items():
        for field, value in total.items():
            update_stats('class.%s.%s' % (cls, field), value)
        if labeled is not None:
            _emit_labeled(labeled, 'class_', total, {'class': cls})


def _totals_by_class(pending, table):
    """What :func:`emit_flush` sends, gathered from ``pending``:
    ``({class: {field: total}}, {tenant: [counts of a bucket, ...]},
    {tenant: class})``, of the tenants with some field that goes to
    statsd."""
    classes = {}
    tenants = {}  # {tenant: [counts of a bucket, ...]}
    tenant_class = {}
    metric_fields = METRIC_FIELDS.intersection
    for (tenant, _bucket), counts in pending.items():
        fields = metric_fields(counts)
        if not fields:
            continue
        entry = table.get(tenant)
        cls = entry.cls if entry is not None else 'unknown'
        tenant_class[tenant] = cls
        total = classes.get(cls)
        if total is None:
            total = classes[cls] = {}
        for field in fields:
            total[field] = total.get(field, 0) + counts[field]
        if tenant in tenants:
            tenants[tenant].append(counts)
        else:
            tenants[tenant] = [counts]
    return classes, tenants, tenant_class


def _busiest(tenants, limit):
    """The ``limit`` tenants of ``tenants`` (``{tenant: [counts of a
    bucket, ...]}``) that made the most requests, as ``tenants`` has
    them."""
    ops_fields = OPS_FIELDS.intersection

    def requests(tenant):
        n = 0
        for counts in tenants[tenant]:
            for field in ops_fields(counts):
                n += counts[field]
        return n
    return {tenant: tenants[tenant] for tenant in heapq.nlargest(
        limit, tenants, key=requests)}


def _emit_labeled(labeled, kind, total, labels):
    """``total`` (``{field: value}``) as labeled counters
    swift_mass_<kind><field's labeled name>, each labeled ``labels`` and,
    for a field of one HTTP method, that method."""
    client, prefix = labeled
    for field, value in total.items():
        name, method = LABELED_FIELDS[field]
        client.update_stats(
            prefix + kind + name, value,
            labels=labels if method is None else dict(labels,
                                                      method=method))


def count_decisions(logger, changed, table):
    """decisions, and labeled, how many by the class decided (none:
    an entry dropped): one packet a class, once a tick.

    ``changed``: the tenants whose entry the leader decided anew in the
    tick; ``table``: the policy table with those decisions in it.
    """
    logger.update_stats('decisions', len(changed))
    labeled = metrics.labeled_only(logger)
    if labeled is None:
        return
    client, prefix = labeled
    by_class = {}
    for tenant in changed:
        entry = table.get(tenant)
        cls = (entry.cls or 'unknown') if entry is not None else 'none'
        by_class[cls] = by_class.get(cls, 0) + 1
    for cls, count in by_class.items():
        client.update_stats(prefix + 'decisions', count,
                            labels={'class': cls})
