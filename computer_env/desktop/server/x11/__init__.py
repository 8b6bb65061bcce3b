"""The X server itself: window queries and window management, which process holds which X
connection, and the watch that finds and releases a grab of the server.

May import: nothing of the server outside this wing (no routes, no ``state``).
"""
