"""What runs in a Swift object server: the ``mass_queue`` filter and its
per-device queue, and the group-commit diskfile module."""
