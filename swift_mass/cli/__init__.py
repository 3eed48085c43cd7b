"""The ``swift-mass`` operator command: what runs in an operator's shell.

Nothing a server imports imports this package."""
