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
"""The ``placed`` mode's placement (runs in the benchmark, outside the
proxy): what an operator does by hand instead of running Mass.

Swift alone, with each tenant's containers created on the storage policy
that ``static`` routes that tenant to (``X-Storage-Policy`` on the
container PUT, as an operator sets it).  That policy is the one the
leader gives a tenant pinned to its workload's class
(``swift_mass.control.controller``: a pin's substore is the class's
substore of the settings the leader decides with), found here the way the
leader finds it: the proxies' ``[filter:mass]`` options parsed as the
filter parses them and, under ``substore_routing = measured``, the
substores checked against the devices' measured speeds
(:class:`swift_mass.control.substores.SubstoreCheck`).  An empty substore
is the default policy: the container PUT names none.
"""
import logging
import time

from swift.common.utils import readconf

from swift_mass.conf import SECTION
from swift_mass.control.substores import SubstoreCheck
from swift_mass.proxy.conf import MassConf


def class_substores(conf_path, now=None, logger=None):
    """{class: storage policy name, '' for the default} as the leader of
    the proxies configured by ``conf_path`` routes pinned tenants now."""
    conf = MassConf(readconf(conf_path, SECTION))
    settings = conf.control
    if conf.substore_routing == 'measured':
        settings = SubstoreCheck(
            conf.swift_dir, logger or logging.getLogger('mass_bench')
        ).settings(settings, time.time() if now is None else now)
    return dict(settings.substores)


def placed_policies(tenants, substores):
    """{tenant label: the storage policy its containers are created on in
    ``placed``, '' for the default}: its workload's own ``policy=`` if it
    names one (every mode creates its containers there), else its intended
    class's substore (``substores``, :func:`class_substores`)."""
    return {t.label: t.workload.policy or
            substores.get(t.workload.intended_class, '')
            for t in tenants}
