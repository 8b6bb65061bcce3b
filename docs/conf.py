"""Sphinx configuration of the holo-bench site (``make docs``; warnings are errors)."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

project = "holo-bench"
author = "H Company"
copyright = "H Company"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "holo_reference",  # the generated reference pages (docs/_ext/holo_reference.py)
    "holo_diagrams",  # the sequence and layer diagrams as SVG (docs/_ext/holo_diagrams.py)
]

# --- the generated reference ------------------------------------------------------------------
# The file formats, one line each: (the file, "module:Model" of one record, a note). The page
# lists every field of the model and of the models nested in it.
holo_schemas = [
    (
        "result.json",
        "fixtures.cases.records.result_format:TaskResult",
        "One per case: `results/<run>/<model>/<domain>/<task_id>/result.json` (with `--samples`, "
        "in `sample-<k>/`). Read it back with "
        "{py:func}`fixtures.cases.records.results.read_result`.",
    ),
    (
        "summary.json",
        "fixtures.report.summary:Summary",
        "One per run: `results/<run>/summary.json`, written by the xdist controller at the end "
        "of the session ({py:mod}`fixtures.report.summary` defines every number).",
    ),
    (
        "traj.jsonl",
        "holo_agent.records:StepRecord",
        "One line per model turn, written as the turn ends: "
        "`results/<run>/<model>/<domain>/<task_id>/traj.jsonl`. Read it back typed with "
        "{py:func}`holo_agent.read_traj`.",
    ),
    (
        "card.json",
        "fixtures.report.card:HarnessCard",
        "One per run: `results/<run>/card.json`, the harness card: everything about the run that "
        "can move a score (also `summary.json`'s `card`). `python -m fixtures.report.compare` "
        "compares two runs' cards; *impact* says what a difference in a field means.",
    ),
]
# The public API pages: the packages whose __all__ is the public surface.
holo_api = [
    "computer_env",
    "computer_env.desktop",
    "computer_env.osworld",
    "computer_env.realtimegym",
    "holo_agent",
]
# Programs that only the harness starts (listed apart on the entry points page).
holo_internal_programs = [
    "computer_env.desktop.server.a11y.atspi_dump",
    "computer_env.desktop.server.commands.nest",
    "computer_env.desktop.server.commands.nest_root",
    "computer_env.desktop.server.input.action_worker",
    "computer_env.guest_programs.ready_probe",
    "computer_env.desktop.server.commands._verifier_main",
    "computer_env.procs.group_guard",
]

# --- sources ----------------------------------------------------------------------------------
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 3
# "--samples" stays two hyphens and '"a" | "b"' straight quotes (options and JSON values)
smartquotes = False

# --- autodoc ----------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"show-inheritance": True}
autodoc_mock_imports = ["ray", "vllm", "torch", "transformers"]

# --- HTML -------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "holo-bench"
html_static_path = ["_static"]
html_css_files = ["holo.css"]
html_show_sourcelink = False
