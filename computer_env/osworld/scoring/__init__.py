"""A finished task scored with OSWorld's semantics: pending saves finished, postconfig, getters
and metrics in a scoring process of its own (its wire, memory and CPU caps, how its end is
read), and what was scored kept and explained.

May import: ``prepare`` (postconfig is set-up; saves wait like readiness), ``catalog``,
``guards``, ``upstream`` and the bottom modules; never planning.
"""
