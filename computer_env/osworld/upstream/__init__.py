"""OSWorld's own code (``desktop_env``): where it comes from (the installed package or a checkout),
importing it without its heavy optional dependencies (absent modules), and importing only the
metrics and getters a task uses.

May import: nothing of ``computer_env.osworld`` outside this wing (the bottom layer).
"""
