"""A finished task scored with OSWorld's semantics: pending saves finished, postconfig, getters
and metrics run by the scoring process (``process``: one package, its client the worker's one
way in), what was scored kept and explained.

``in_process`` is OSWorld's evaluation run in the calling process: the scoring process's child
and the ``plan`` command run it; a worker never imports it (an import-linter contract says so).
``result`` holds what scoring gives, read on both sides.

May import: ``prepare`` (postconfig is set-up; saves wait like readiness), ``catalog``,
``guards``, ``upstream`` and the bottom modules; never planning.
"""
