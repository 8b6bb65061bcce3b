"""The harness tests' process imports ``scipy.stats`` (and so numpy) once, up front: several tests
run a suite in-process with ``pytester``, which unloads the modules a run imported, and numpy
cannot be imported a second time in one process (``fixtures.report.stats`` imports scipy only
where it computes, so that the suite's workers do not carry it)."""

import scipy.stats  # noqa: F401
