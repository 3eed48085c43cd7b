"""The device-class library: devices' IOPS and performance classes, the
BACOS lookup table of class weights, ring weights stepped towards them,
and substores' rings over every server.

What the ``swift-mass`` command (``devices``, ``weights``, ``substores``,
``check-rings``) and the benchmark's ring variants run on; it imports
neither of them, and no server imports it."""
