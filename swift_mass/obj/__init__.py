"""What runs in a Swift object server: the ``mass_queue`` filter and its
per-device queue."""
