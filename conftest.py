"""Root conftest: loads the suite's pytest plugin (the composition root lives in ``fixtures``)."""

pytest_plugins = ["fixtures.run.plugin"]
