"""What the screen shows: XShm grabs with the cursor drawn in, their encodings (PNG rows, bands),
when the screen stopped changing (DAMAGE, the app's CPU time) and screen recording.

May import: nothing of the server outside this wing (no routes, no ``state``).
"""
