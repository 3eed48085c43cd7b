"""What runs in a Swift proxy server: the ``mass`` filter and its parts."""
