"""The control loop: counting, classifying, deciding and sharing policies.

Runs inside every proxy worker (``swift_mass.proxy``) and is read by the
``swift-mass`` command; pure decisions (monitor, classify, controller) have
no WSGI in them."""
