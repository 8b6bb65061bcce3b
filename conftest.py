"""Root conftest: loads the suite's pytest plugin (the composition root lives in ``fixtures``).

An installed holo-bench loads it already (its ``pytest11`` entry point, of the same name, so this
line then finds it registered); this line keeps it loaded where entry points are not read
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``, a checkout that is not installed). Either way it acts only
in a benchmark session: ``fixtures/run/activation.py``."""

pytest_plugins = ["fixtures.run.plugin"]
