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
"""Mass's statsd metrics, under their legacy dotted names and, where Swift
offers it, with labels.

Every metric goes out under its legacy name (``cache.hit``,
``queue.wait.5``, ``tenant.AUTH_test.ops.GET``) through the filter's
logger, so with Swift's prefixes (``log_statsd_metric_prefix``, the
filter's ``mass.`` or ``mass_queue.``) as operators' dashboards know it.

Swift 2.36 and later also offers middleware a labeled statsd client
(``swift.common.statsd_client.get_labeled_statsd_client``): with
``statsd_label_mode`` set (``dogstatsd``, ``librato``, ``influxdb`` or
``graphite``) beside ``log_statsd_host``, each metric is sent once more,
under a name of its own (``swift_mass_cache``,
``swift_mass_queue_wait_timing``) with its tenant, class, method, device
or priority as labels, as Swift's proxy_logging sends
``swift_proxy_server_request_timing``.  A labeled packet goes only where a
legacy one goes (the object server's two per request, priority and class,
become one), so no request sends a packet where it sent none; Swift's
``statsd_emit_legacy = false`` stops the legacy ones.  On Swift 2.33 to
2.35, or with ``statsd_label_mode`` unset or ``disabled``, only the legacy
names are sent, at the cost of one attribute lookup more.

docs/metrics.md lists every metric, its labels and what moves it.
"""
try:
    from swift.common.statsd_client import get_labeled_statsd_client
except ImportError:  # Swift < 2.36: no labeled metrics
    get_labeled_statsd_client = None

# the attribute of a filter's logger that holds (labeled client, name
# prefix): every part of a filter already holds its logger, as Swift's
# get_logger hangs its own statsd client on the logger it makes
LABELED_ATTR = 'mass_labeled_statsd'

#: the labeled names' prefixes: the proxy filter's, the object server
#: filter's and the group-commit diskfile's
PROXY_PREFIX = 'swift_mass_'
QUEUE_PREFIX = 'swift_mass_queue_'
GROUP_COMMIT_PREFIX = 'swift_mass_group_commit_'

#: tenants with statsd counters of their own, per proxy worker and flush
#: (``tenant_metrics``)
DEFAULT_TENANT_METRICS = 1000


def labeled_client(conf, logger=None):
    """Swift's labeled statsd client for ``conf``, or None when Swift
    offers none, no statsd host is set, or ``statsd_label_mode`` is unset
    or ``disabled`` (a disabled client would still cost every metric a
    call).  An unknown mode raises ValueError, as it stops Swift's own
    servers."""
    if get_labeled_statsd_client is None or not conf.get('log_statsd_host'):
        return None
    mode = conf.get('statsd_label_mode', 'disabled')
    if not mode or mode.lower() == 'disabled':
        return None
    # the stdlib logger, as Swift's servers give it, for send errors
    return get_labeled_statsd_client(conf, getattr(logger, 'logger', None))


def attach(logger, conf, prefix):
    """Let ``logger``'s metrics go out with labels too, as ``conf`` says
    (:func:`labeled_client`), under names beginning with ``prefix``;
    returns the client or None."""
    client = labeled_client(conf, logger)
    setattr(logger, LABELED_ATTR,
            None if client is None else (client, prefix))
    return client


def _labeled(logger):
    return getattr(logger, LABELED_ATTR, None)


def increment(logger, legacy, name, labels=None):
    """Count one under ``legacy`` and, if labeled, under ``name``."""
    logger.increment(legacy)
    labeled = _labeled(logger)
    if labeled is not None:
        labeled[0].increment(labeled[1] + name, labels=labels)


def update_stats(logger, legacy, name, value, labels=None):
    """Count ``value`` under ``legacy`` and, if labeled, under ``name``."""
    logger.update_stats(legacy, value)
    labeled = _labeled(logger)
    if labeled is not None:
        labeled[0].update_stats(labeled[1] + name, value, labels=labels)


def timing(logger, legacy, name, ms, labels=None):
    """A timing (or a distribution sent as one) of ``ms``."""
    logger.timing(legacy, ms)
    labeled = _labeled(logger)
    if labeled is not None:
        labeled[0].timing(labeled[1] + name, ms, labels=labels)


def labeled_only(logger):
    """The labeled client and prefix of ``logger`` ((client, prefix)), or
    None: for a caller whose labeled packets do not match its legacy ones
    one to one."""
    return _labeled(logger)


def policy_labels(entry):
    """The labels of a request by its tenant's policy entry (a
    :class:`swift_mass.control.entry.PolicyEntry`; None: no entry)."""
    if entry is None:
        return {'class': 'unknown'}
    return {'class': entry.cls or 'unknown'}
