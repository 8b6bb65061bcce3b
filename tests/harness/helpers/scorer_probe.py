"""A pytest plugin (``-p tests.harness.helpers.scorer_probe``) for a child suite run: at the end
of the session, each process writes its peak resident memory and which of OSWorld's heavy modules
it imported to ``$SCORER_PROBE_DIR/<worker>.json``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HEAVY = (
    "pandas",
    "openpyxl",
    "docx",
    "borb",
    "playwright",
    "PyPDF2",
    "pdfminer",
    "skimage",
    "googleapiclient",
    "desktop_env.evaluators.metrics.table",
    "desktop_env.controllers.setup",
)


def pytest_sessionfinish(session: object) -> None:
    status = dict(
        line.split(":", 1)
        for line in Path("/proc/self/status").read_text().splitlines()
        if ":" in line
    )
    out = (
        Path(os.environ["SCORER_PROBE_DIR"])
        / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.json"
    )
    out.write_text(
        json.dumps(
            {
                "vm_hwm_kib": int(status["VmHWM"].split()[0]),
                "heavy": [m for m in HEAVY if m in sys.modules],
            }
        )
    )
