"""The headers under which ``swift-mass`` sets and reads the marks the
``mass`` filter keeps (:mod:`swift_mass.proxy.marks`).

Nothing here imports Swift or eventlet: ``swift-mass`` imports it on
operators' machines.
"""

# On a container: swift-mass migrate is moving it; writes are refused.
MIGRATING_HEADER = 'X-Mass-Migrating'
# On an account: the tenant's requests get mass_queue's reserved slots.
URGENT_HEADER = 'X-Mass-Urgent'
