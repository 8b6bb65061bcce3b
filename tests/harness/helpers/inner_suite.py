"""The conftest of the tiny synthetic suite that the report tests run with ``pytester``.

It plays the part of the suite's main plugin: registers the real ``ReportPlugin``, writes each
case's ``result.json`` and ``replay.html`` and attaches the TaskResult to
``report.user_properties``. A case's fields come from its ``spec`` parameter.
"""

from __future__ import annotations

from pathlib import Path

_CONFTEST = r"""
import pytest
from pathlib import Path
from fixtures.cases.records.redact import register_secret
from fixtures.report.report import ReportPlugin, task_result_property
from fixtures.cases.records.results import TaskResult, Versions, task_dir, write_result

RUN_DIR = Path(__RUN_DIR__)
MODEL = __MODEL__
REFERENCE_POLICY = __REFERENCE_POLICY__
REPLAY = __REPLAY__
for secret in __SECRETS__:
    register_secret(secret)


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(
            ReportPlugin(RUN_DIR, reference_policy=REFERENCE_POLICY, compare_to=__COMPARE_TO__),
            "bench-report")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    spec = getattr(item, "callspec", None) and item.callspec.params.get("spec")
    if spec is None or rep.when != "call":
        return
    domain, task_id = spec["case_id"].split("/", 1)
    result = TaskResult(
        benchmark="osworld", case_id=spec["case_id"], domain=domain, task_id=task_id,
        instruction=spec.get("instruction", ""), outcome=spec["outcome"], score=spec["score"],
        threshold=1.0, message=spec.get("message", ""), steps=spec.get("steps", 0),
        infra_category=spec.get("infra"), infra_reason=spec.get("reason"),
        versions=Versions(model=MODEL), reference_policy=REFERENCE_POLICY,
    )
    folder = task_dir(RUN_DIR, MODEL, result.case_id)
    write_result(folder, result)
    (folder / "replay.html").write_text(REPLAY.format(task_id=task_id))
    rep.user_properties.append(task_result_property(result))
"""


def report_conftest(
    run_dir: Path,
    *,
    model: str,
    reference_policy: bool,
    replay: str,
    secrets: tuple[str, ...] = (),
    compare_to: Path | None = None,
) -> str:
    """The conftest text: results of ``model`` under ``run_dir``; ``replay`` is each case's
    replay page (``{task_id}`` filled in); ``secrets`` are registered for redaction."""
    values = {
        "__RUN_DIR__": repr(str(run_dir)),
        "__MODEL__": repr(model),
        "__REFERENCE_POLICY__": repr(reference_policy),
        "__REPLAY__": repr(replay),
        "__SECRETS__": repr(list(secrets)),
        "__COMPARE_TO__": repr(None if compare_to is None else str(compare_to)),
    }
    text = _CONFTEST
    for key, value in values.items():
        text = text.replace(key, value)
    return text
