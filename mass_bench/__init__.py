"""The benchmark of Mass against a SAIO (``tools/bench``).

It drives the cluster that ``tools/saio`` builds and switches Mass in and
out of its pipelines with it, so it lives in the checkout, beside the
SAIO, and is not part of the installed package."""
