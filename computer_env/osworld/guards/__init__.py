"""What a task file and the agent may not do to the host or to the score: task paths and URLs
confined to the cache folder, host downloads kept off this host and its private networks
(whatever the spelling, DNS or a redirect says), and the tamper audit of what the agent left for
the evaluator.

May import: nothing of ``computer_env.osworld`` outside this wing (the bottom layer); the
desktop client (the tamper audit reads the desktop).
"""
