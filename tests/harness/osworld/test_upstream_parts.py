"""A worker imports only the part of OSWorld's code a task needs: its setup module without
every metric, one metric's module without the others, and the whole package when asked (each
check in a fresh interpreter, where ``sys.modules`` starts empty)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from computer_env.osworld.upstream.loader import upstream_available

pytestmark = pytest.mark.skipif(not upstream_available(), reason="desktop_env is not installed")

PROBE = r"""
import json, sys
from computer_env.osworld.upstream import loader as u
def loaded(*names):
    return {n: n in sys.modules for n in names}
out = {}
u.upstream_setup_module()
out["setup"] = loaded("pandas", "desktop_env.evaluators.metrics.table",
                      "desktop_env.evaluators.metrics.chrome", "desktop_env.evaluators.metrics.utils")
fn = u.upstream_metric("check_include_exclude")
out["metric"] = [fn.__module__, loaded("desktop_env.evaluators.metrics.table",
                                        "desktop_env.evaluators.metrics.docs")]
out["getter"] = u.upstream_getter("get_vm_command_line").__module__
out["missing"] = [u.upstream_metric("no_such_metric"), u.upstream_getter("get_no_such")]
full = u.upstream_metrics()
out["full"] = [full.compare_table.__module__, full.check_include_exclude is fn,
               hasattr(full, "utils"), callable(getattr(full, "infeasible", None))]
out["after_full"] = u.upstream_metric("compare_table") is full.compare_table
print(json.dumps(out))
"""


def test_only_the_needed_parts_are_imported() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["setup"] == {
        "pandas": False,
        "desktop_env.evaluators.metrics.table": False,
        "desktop_env.evaluators.metrics.chrome": False,
        "desktop_env.evaluators.metrics.utils": True,
    }
    module, others = out["metric"]
    assert module == "desktop_env.evaluators.metrics.general" and not any(others.values())
    assert out["getter"] == "desktop_env.evaluators.getters.general"
    assert out["missing"] == [None, None]
    assert out["full"] == ["desktop_env.evaluators.metrics.table", True, True, True]
    assert out["after_full"] is True
