"""OSWorld tasks as pytest cases: one parametrized case per task (id ``domain/task_id``).

The plugin (``fixtures``) loads the tasks, gives each case a reset desktop and a model endpoint,
and scores it the way OSWorld does. Without ``--osworld-root`` the built-in tasks run.
"""


def test_osworld(osworld_case):
    osworld_case.run()
