"""OSWorld's scoring semantics on small synthetic evaluators with OSWorld's OWN getters and metrics
(the installed desktop-env package) against real files, real loopback HTTP servers and a real
local desktop; infra failures are unscored, modules not installed here are skips."""

from __future__ import annotations

import csv
import http.server
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import EvaluatorInfraError
from computer_env.osworld import EvaluatorUnsupported, TaskContext, default_vars
from computer_env.osworld.catalog.tasks import Task, parse_task
from computer_env.osworld.scoring.in_process import (
    ensure_supported_in_process as ensure_supported,
)
from computer_env.osworld.scoring.in_process import (
    evaluate_in_process as evaluate,
)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_ctx(
    tmp_path: Path,
    client: DesktopClient | None = None,
    handle: DesktopHandle | None = None,
    history: list[str] | None = None,
    extra_vars: dict[str, str] | None = None,
) -> TaskContext:
    """A context whose desktop is unreachable unless a real client is given."""
    if handle is None:
        handle = DesktopHandle(url=f"http://127.0.0.1:{_closed_port()}", token="t")
    if client is None:
        client = DesktopClient(handle.url, handle.token, timeout=2.0, retries=0)
    vars_ = {**default_vars((1280, 720)), **(extra_vars or {})}
    return TaskContext(
        client=client,
        handle=handle,
        cache_dir=tmp_path / "cache",
        vars=vars_,
        screen=(1280, 720),
        action_history=list(history or []),
        task_id="t1",
    )


def task(evaluator: dict[str, Any]) -> Task:
    return parse_task({"id": "t1", "instruction": "test", "evaluator": evaluator}, domain="demo")


def put(ctx: TaskContext, name: str, text: str) -> None:
    (ctx.task_cache_dir / name).write_text(text, encoding="utf-8")


def cache(name: str) -> dict[str, str]:
    return {"type": "cache_file", "path": name}


TEXT_EQ = {"func": "compare_text_file", "result": cache("out.txt"), "expected": cache("gold.txt")}


# ------------------------------------------------------------------------ the semantics table


@pytest.mark.parametrize(
    "history,score",
    [
        (["pyautogui.click(1, 2)", "FAIL"], 1.0),
        (["pyautogui.click(1, 2)", "DONE"], 0.0),
        ([], 0.0),
        (["FAIL", "pyautogui.click(1, 2)"], 0.0),
        ([{"action_type": "FAIL"}], 1.0),
    ],
)
def test_infeasible_scores_by_last_action(tmp_path: Path, history: list[Any], score: float) -> None:
    res = evaluate(task({"func": "infeasible"}), make_ctx(tmp_path, history=history))
    assert res.score == score and "infeasible" in res.reason


def test_normal_task_scores_metric_and_fail_gives_zero(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, history=["pyautogui.press('enter')", "DONE"])
    put(ctx, "out.txt", "hello world\n")
    put(ctx, "gold.txt", "hello world\n")
    res = evaluate(task(TEXT_EQ), ctx)
    assert res.score == 1.0 and res.backend == "osworld"
    assert res.detail[0].func == "compare_text_file" and res.detail[0].score == 1.0
    assert res.detail[0].result.endswith("out.txt") and res.detail[0].result_type == "cache_file"

    ctx.action_history.append("FAIL")
    res = evaluate(task(TEXT_EQ), ctx)
    assert res.score == 0.0 and "FAIL" in res.reason and res.detail == []


def test_missing_cache_file_is_unscored_not_zero(tmp_path: Path) -> None:
    """OSWorld's cache_file getter asserts its file exists (setup writes it): its absence is the
    environment's failure, never the model's 0."""
    ctx = make_ctx(tmp_path)
    put(ctx, "gold.txt", "x")
    with pytest.raises(EvaluatorInfraError, match="cache_file"):
        evaluate(task(TEXT_EQ), ctx)


def test_conj_and(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    put(ctx, "out.txt", "a\nb\n")
    put(ctx, "gold.txt", "a\nb\n")
    put(ctx, "half.txt", "a\nc\n")
    ev = {
        "func": ["compare_text_file", "diff_text_file"],
        "result": [cache("out.txt"), cache("half.txt")],
        "expected": [cache("gold.txt"), cache("gold.txt")],
    }
    res = evaluate(task(ev), ctx)
    assert res.score == pytest.approx((1.0 + 0.5) / 2)
    assert [d.score for d in res.detail] == [1.0, 0.5]

    ev_text = {
        "func": ["compare_text_file", "compare_text_file"],
        "result": [cache("half.txt"), cache("out.txt")],
        "expected": [cache("gold.txt"), cache("gold.txt")],
    }
    res = evaluate(task(ev_text), ctx)
    assert res.score == 0.0
    assert res.detail[0].score == 0.0 and res.detail[1].skipped


def test_conj_or(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    put(ctx, "out.txt", "a\nb\n")
    put(ctx, "gold.txt", "a\nb\n")
    put(ctx, "half.txt", "a\nc\n")
    ev = {
        "func": ["compare_text_file", "compare_text_file"],
        "conj": "or",
        "result": [cache("half.txt"), cache("out.txt")],
        "expected": [cache("gold.txt"), cache("gold.txt")],
    }
    res = evaluate(task(ev), ctx)
    assert res.score == 1.0 and [d.score for d in res.detail] == [0.0, 1.0]

    ev_max = {
        "func": ["compare_text_file", "diff_text_file"],
        "conj": "or",
        "result": [cache("half.txt"), cache("half.txt")],
        "expected": [cache("gold.txt"), cache("gold.txt")],
    }
    assert evaluate(task(ev_max), ctx).score == 0.5

    ev_first = {
        "func": ["compare_text_file", "compare_text_file"],
        "conj": "or",
        "result": [cache("out.txt"), cache("half.txt")],
        "expected": [cache("gold.txt"), cache("gold.txt")],
    }
    res = evaluate(task(ev_first), ctx)
    assert res.score == 1.0 and res.detail[0].score == 1.0 and res.detail[1].skipped


def test_options_list_is_aligned_with_funcs(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    put(ctx, "upper.txt", "HELLO  World")
    put(ctx, "lower.txt", "hello world")
    ev = {
        "func": ["compare_text_file", "compare_text_file"],
        "result": [cache("upper.txt"), cache("upper.txt")],
        "expected": [cache("lower.txt"), cache("lower.txt")],
        "options": [{"ignore_case": True, "ignore_blanks": True}, {}],
    }
    res = evaluate(task(ev), ctx)
    assert [d.score for d in res.detail] == [1.0, 0.0] and res.score == 0.0
    assert res.detail[0].options == {"ignore_case": True, "ignore_blanks": True}
    ev["conj"] = "or"
    ev["options"] = [None, {"ignore_case": True, "ignore_blanks": True}]
    assert evaluate(task(ev), ctx).score == 1.0


def test_single_metric_with_rule_getters_and_preview(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    long_text = "x" * 5000
    put(ctx, "log.txt", long_text)
    ev = {
        "func": "exact_match",
        "result": {"type": "rule", "rules": long_text},
        "expected": {"type": "rule", "rules": {"expected": long_text}},
    }
    res = evaluate(task(ev), ctx)
    assert res.score == 1.0
    assert len(res.detail[0].result) <= 300 and len(res.detail[0].expected) <= 300


# ---------------------------------------------------------------- metrics on real documents


def test_compare_table_and_csv(tmp_path: Path) -> None:
    import openpyxl
    import pandas as pd

    ctx = make_ctx(tmp_path)
    d = ctx.task_cache_dir
    frame = pd.DataFrame({"Name": ["a", "b"], "Total": [42, 7]})
    with pd.ExcelWriter(d / "gold.xlsx", engine="openpyxl") as w:
        frame.to_excel(w, sheet_name="Sheet1", index=False)
    frame.to_csv(d / "out.csv", index=False)
    wrong = frame.assign(Total=[41, 7])
    with pd.ExcelWriter(d / "wrong.xlsx", engine="openpyxl") as w:
        wrong.to_excel(w, sheet_name="Sheet1", index=False)
    rules = {
        "rules": [
            {"type": "sheet_name"},
            {"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"},
        ]
    }
    for result, score in (("gold.xlsx", 1.0), ("wrong.xlsx", 0.0)):
        ev = {
            "func": "compare_table",
            "result": cache(result),
            "expected": cache("gold.xlsx"),
            "options": rules,
        }
        assert evaluate(task(ev), ctx).score == score, result
    frame.to_csv(d / "gold.csv", index=False)
    ev = {"func": "compare_csv", "result": cache("out.csv"), "expected": cache("gold.csv")}
    assert evaluate(task(ev), ctx).score == 1.0
    book = openpyxl.load_workbook(d / "gold.xlsx")
    assert book["Sheet1"]["B2"].value == 42
    cell = {
        "func": "compare_table",
        "result": cache("gold.xlsx"),
        "options": {
            "rules": [
                {
                    "type": "check_cell",
                    "sheet_idx": 0,
                    "coordinate": "B2",
                    "props": {"value": {"method": "eq", "ref": 42}},
                }
            ]
        },
    }
    assert evaluate(task(cell), ctx).score == 1.0


def test_compare_docx_files_and_check_csv(tmp_path: Path) -> None:
    from docx import Document

    ctx = make_ctx(tmp_path)
    d = ctx.task_cache_dir
    for name, paras in (
        ("a.docx", ["Hello", "World  again"]),
        ("b.docx", ["Hello", "World again"]),
        ("c.docx", ["Hello", "Word"]),
    ):
        doc = Document()
        for p in paras:
            doc.add_paragraph(p)
        doc.save(str(d / name))
    ev: dict[str, Any] = {
        "func": "compare_docx_files",
        "result": cache("a.docx"),
        "expected": cache("b.docx"),
    }
    assert evaluate(task(ev), ctx).score == 1.0
    ev["result"] = cache("c.docx")
    assert evaluate(task(ev), ctx).score == 0.0

    with open(d / "t.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, ["name", "qty"])
        writer.writeheader()
        writer.writerows([{"name": "apple", "qty": "3"}, {"name": "pear", "qty": "1"}])
    ev = {
        "func": "check_csv",
        "result": cache("t.csv"),
        "expected": {
            "type": "rule",
            "rules": {"expect": [{"name": "apple", "qty": "3"}], "unexpect": [{"name": "plum"}]},
        },
    }
    assert evaluate(task(ev), ctx).score == 1.0
    ev["expected"]["rules"]["unexpect"] = [{"name": "pear"}]
    assert evaluate(task(ev), ctx).score == 0.0


# ------------------------------------------------------------------------- unsupported names


def test_unknown_metric_or_getter_is_unsupported_not_zero(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    with pytest.raises(EvaluatorUnsupported, match="no_such_metric"):
        evaluate(
            task({"func": "no_such_metric", "result": cache("a"), "expected": cache("b")}), ctx
        )
    bad_getter = task(
        {
            "func": "exact_match",
            "result": {"type": "no_such_getter"},
            "expected": {"type": "rule", "rules": {"expected": 1}},
        }
    )
    with pytest.raises(EvaluatorUnsupported, match="no_such_getter"):
        ensure_supported(bad_getter, ctx)
    with pytest.raises(EvaluatorUnsupported):
        evaluate(bad_getter, ctx)


@pytest.mark.parametrize(
    "evaluator,module",
    [
        (
            {
                "func": "compare_image_text",
                "result": cache("a.png"),
                "expected": {"type": "rule", "rules": {"type": "text", "text": "x"}},
            },
            "easyocr",
        ),
    ],
)
def test_metric_needing_a_module_not_installed_is_skipped_before_setup(
    tmp_path: Path, evaluator: dict[str, Any], module: str
) -> None:
    """OSWorld's OCR code imports a module left out of the install (easyocr needs torch; audio
    and Google Drive modules are installed): the task is skipped with that reason before setup,
    and were it run, the absent module raises through OSWorld's ``except Exception`` instead of
    scoring 0."""
    from computer_env.osworld.upstream.loader import MissingDependency, upstream_metrics

    with pytest.raises(EvaluatorUnsupported, match=module):
        ensure_supported(task(evaluator))
    if module == "easyocr":
        from PIL import Image

        image = tmp_path / "a.png"
        Image.new("RGB", (8, 8)).save(image)
        with pytest.raises(MissingDependency, match="easyocr"):
            upstream_metrics().compare_image_text(str(image), {"type": "text", "text": "x"})


# ----------------------------------------------------------------- infra failures are not 0


class _Files(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "www"
    root.mkdir()
    handler = lambda *a, **kw: _Files(*a, directory=str(root), **kw)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_cloud_file_from_asset_server_and_dead_server_is_infra(
    tmp_path: Path, file_server: tuple[str, Path]
) -> None:
    url, root = file_server
    (root / "gold.txt").write_text("same\n")
    ctx = make_ctx(tmp_path, extra_vars={"ASSET_URL": url})
    put(ctx, "out.txt", "same\n")
    ev = {
        "func": "compare_text_file",
        "result": cache("out.txt"),
        "expected": {"type": "cloud_file", "path": "{ASSET_URL}/gold.txt", "dest": "gold.txt"},
    }
    assert evaluate(task(ev), ctx).score == 1.0

    ctx2 = make_ctx(tmp_path / "2", extra_vars={"ASSET_URL": f"http://127.0.0.1:{_closed_port()}"})
    put(ctx2, "out.txt", "same\n")
    with pytest.raises(EvaluatorInfraError, match="cloud_file"):
        evaluate(task(ev), ctx2)


def test_vm_file_with_unreachable_desktop_is_infra_not_zero(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    put(ctx, "gold.txt", "x")
    ev = {
        "func": "compare_text_file",
        "result": {"type": "vm_file", "path": "/tmp/x.txt", "dest": "x.txt"},
        "expected": cache("gold.txt"),
    }
    with pytest.raises(EvaluatorInfraError):
        evaluate(task(ev), ctx)
    chrome_ev = {
        "func": "is_expected_active_tab",
        "result": {"type": "active_tab_info"},
        "expected": {"type": "rule", "rules": {"type": "url", "url": "http://x/"}},
    }
    with pytest.raises(EvaluatorInfraError):
        evaluate(task(chrome_ev), ctx)


needs_desktop = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)


@pytest.mark.desktop
@needs_desktop
def test_on_a_real_desktop_then_server_killed(tmp_path: Path) -> None:
    """vm_file / vm_command_line / postconfig on a live desktop; once its server is gone the
    same evaluation raises EvaluatorInfraError instead of scoring 0."""
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider

    provider = LocalSandboxProvider(width=1024, height=768)
    try:
        handle = provider.start()
        client = DesktopClient.from_handle(handle, retries=1, timeout=10.0)
        ctx = make_ctx(tmp_path, client=client, handle=handle)
        put(ctx, "gold.txt", "written by postconfig\n")
        ev = {
            "postconfig": [
                {
                    "type": "execute",
                    "parameters": {
                        "command": "echo 'written by postconfig' > /tmp/post.txt",
                        "shell": True,
                    },
                }
            ],
            "func": ["compare_text_file", "check_include_exclude", "compare_text_file"],
            "result": [
                {"type": "vm_file", "path": "/tmp/post.txt", "dest": "post.txt"},
                {"type": "vm_command_line", "command": ["cat", "/tmp/post.txt"]},
                {"type": "vm_file", "path": "/tmp/absent.txt", "dest": "absent.txt"},
            ],
            "expected": [
                cache("gold.txt"),
                {"type": "rule", "rules": {"include": ["postconfig"], "exclude": []}},
                cache("gold.txt"),
            ],
            "conj": "or",
        }
        res = evaluate(task(ev), ctx)
        assert res.postconfig is not None and res.postconfig.steps[0].type == "execute"
        assert res.score == 1.0 and res.detail[0].score == 1.0
        ev["conj"] = "and"
        res = evaluate(task(ev), ctx)  # the missing guest file is the model's fault: 0
        assert res.score == 0.0 and [d.score for d in res.detail] == [1.0, 1.0, 0.0]
        provider.close()
        del ev["postconfig"]
        with pytest.raises(EvaluatorInfraError):
            evaluate(task(ev), ctx)
    finally:
        provider.close()


def test_a_task_that_races_the_embedded_desktop_is_skipped_there_only() -> None:
    """os/13584542's own postconfig types 0.5 s after opening a terminal: on the embedded desktop
    it is skipped before setup with the reason (never a zero of the environment's); on an
    OSWorld VM it runs."""
    from types import SimpleNamespace

    from computer_env.osworld.catalog.tasks import load_task_file
    from computer_env.osworld.errors import EvaluatorUnsupported
    from computer_env.osworld.scoring.in_process import EMBEDDED_TIMING_DEFECTS
    from computer_env.osworld.scoring.in_process import (
        ensure_supported_in_process as ensure_supported,
    )
    from tests.harness.helpers.suite import OSWORLD_DATA

    path = OSWORLD_DATA / "examples" / "os" / "13584542-872b-42d8-b299-866967b5c3ef.json"
    if not path.exists():
        pytest.skip(f"OSWorld's task files are not at {OSWORLD_DATA}")
    task = load_task_file(path, "os")
    assert task.id in EMBEDDED_TIMING_DEFECTS
    with pytest.raises(EvaluatorUnsupported, match="gnome-terminal takes"):
        ensure_supported(task, SimpleNamespace(embedded=True))  # type: ignore[arg-type]
    ensure_supported(task, SimpleNamespace(embedded=False))  # type: ignore[arg-type]
