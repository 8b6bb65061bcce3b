"""Where OSWorld's code comes from: the installed ``desktop-env`` package, or a user's checkout
(``--osworld-root``), which wins; its evaluation code imports without torch and easyocr
installed, and only what needs them is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _source_in_child(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_installed_package_is_the_default() -> None:
    source = _source_in_child(
        "from computer_env.osworld.upstream.loader import osworld_source; print(osworld_source())"
    )
    assert source.startswith("desktop-env ") and source.endswith("(package)")


def test_a_checkout_given_with_osworld_root_wins(tmp_path: Path) -> None:
    checkout = tmp_path / "OSWorld"
    (checkout / "desktop_env").mkdir(parents=True)
    (checkout / "desktop_env" / "__init__.py").write_text("CHECKOUT = True\n")
    (checkout / "evaluation_examples").mkdir()
    code = (
        "import sys; from pathlib import Path\n"
        "from fixtures.run.run_start import add_osworld_to_path\n"
        f"add_osworld_to_path(Path({str(checkout / 'evaluation_examples')!r}))\n"
        "import desktop_env\n"
        "from computer_env.osworld.upstream.loader import osworld_source\n"
        "assert desktop_env.CHECKOUT\n"
        "print(osworld_source())\n"
    )
    assert _source_in_child(code) == f"checkout {checkout}"


def test_evaluation_code_imports_without_the_heavy_modules() -> None:
    code = (
        "import importlib.util\n"
        "from computer_env.osworld.upstream.loader import (upstream_getters, upstream_metrics,\n"
        "    upstream_python_controller, upstream_setup_module)\n"
        "m = upstream_metrics(); g = upstream_getters(); upstream_setup_module()\n"
        "upstream_python_controller()\n"
        "missing = [n for n in ('torch', 'easyocr', 'librosa', 'pydrive')\n"
        "           if importlib.util.find_spec(n) is None or\n"
        "           type(importlib.util.find_spec(n).loader).__name__ == '_AbsentFinder']\n"
        "print(sorted(missing), len([n for n in dir(m) if not n.startswith('_')]) > 100)\n"
    )
    assert _source_in_child(code) == "['easyocr', 'torch'] True"
