"""The harness tests' shared helpers, one package imported one way:
``from tests.harness.helpers.polling import wait_for`` (the project root is on ``sys.path`` in
every pytest process: the root ``conftest.py`` puts it there; a child process gets it as its
working directory or ``PYTHONPATH``).

- ``polling``: :func:`~.polling.wait_for` and the tests' time scale (``HOLO_TEST_TIME_SCALE``);
- ``tiers``: the tiers (fast, desktop, e2e) and the marks each test gets by what it uses;
- ``suite``, ``audit_suite``, ``inner_suite``: child benchmark runs and what they wrote;
- ``xdesktop``, ``localdesk``, ``dockerd``, ``raycluster``: real desktops, a Docker daemon, a
  Ray cluster;
- ``memenv``, ``httpstub``, ``reference_requests``, ``parsed_settings``: in-process doubles
  and inputs; ``pipeline_rig``: the worker pipeline over fake desktops and a fake benchmark;
- ``chaos``, ``scorer_probe`` (pytest plugins of child runs), ``scorer_*jobs`` (scoring jobs).
"""
