"""``python -m fixtures.report.compare`` on bad input: one line naming the file (and the line and the
column) and exit status 2, never a traceback; a run folder's unreadable ``result.json`` is
reported by name and its task counted as unscored, never silently dropped. The CLI's ``main`` is
called in process (an exception would fail the test as a traceback would); ``test_compare.py``
runs it as a real child process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures.cases.records.result_format import Outcome
from fixtures.cases.records.results import TaskResult, Versions, task_dir, write_result
from fixtures.report.compare import CompareInputError, compare, load_side
from fixtures.report.compare.__main__ import main
from tests.harness.helpers.cli import CliRun, run_main

GOOD_CSV = "domain,task_id,score\nos,a,1\nos,b,0\n"


def _cli(*args: str) -> CliRun:
    return run_main(main, *args)


def _run(folder: Path, scores: dict[str, float | None], model: str = "Org/M") -> Path:
    for task_id, score in scores.items():
        outcome: Outcome = "unscored" if score is None else ("passed" if score >= 1 else "failed")
        write_result(
            task_dir(folder, model, f"os/{task_id}"),
            TaskResult(
                benchmark="osworld",
                case_id=f"os/{task_id}",
                domain="os",
                task_id=task_id,
                outcome=outcome,
                score=score,
                versions=Versions(model=model),
            ),
        )
    return folder


def test_non_utf8_csv_is_one_line_naming_file_line_and_byte(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "latin1.csv"
    good.write_text(GOOD_CSV)
    bad.write_bytes("domain,task_id,score\nos,a,1\nos,caf\u00e9,0\n".encode("latin-1"))
    proc = _cli(str(good), str(bad))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{bad}:3: not UTF-8 text (byte 0xe9 at offset 34)" in lines[0]
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_bytes(b'{"domain": "os", "task_id": "\xff", "score": 1}\n')
    with pytest.raises(CompareInputError, match=r"t\.jsonl:1: not UTF-8 text \(byte 0xff"):
        load_side(jsonl)


def test_non_utf8_osworld_result_txt_is_named(tmp_path: Path) -> None:
    task = tmp_path / "tree" / "os" / "t1"
    task.mkdir(parents=True)
    (task / "result.txt").write_bytes(b"\xff\xfe1\n")
    with pytest.raises(CompareInputError, match=r"t1/result\.txt:1: not UTF-8 text"):
        load_side(tmp_path / "tree")


@pytest.mark.parametrize(
    "content, line, message",
    [
        ("domain,task_id,score\nos,a,1\nos,b,0,extra\n", 3, "4 fields, more than the header's 3"),
        ("domain,task_id,score\nos,a,1,,\n", 2, "5 fields, more than the header's 3"),
        ("domain,task_id,score\nos,a\n", 2, "2 fields, fewer than the header's 3"),
    ],
)
def test_rows_with_another_field_count_are_refused(
    tmp_path: Path, content: str, line: int, message: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(content)
    with pytest.raises(CompareInputError) as exc:
        load_side(path)
    assert f"{path}:{line}: {message}" in str(exc.value)


def test_a_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("domain,task_id,score,score\nos,a,1,0\n")
    with pytest.raises(CompareInputError, match=r"t\.csv: header: column 'score' appears twice"):
        load_side(path)


BAD_CSV_SCORES = ["nan", "NaN", "inf", "-inf", "-1", "1.5", "NA", "n/a", "none", "-"]
BAD_JSON_SCORES = ["NaN", "Infinity", "-1", "1.5", '"nan"', '"NA"', "[1]"]


def test_a_score_is_empty_or_a_number_in_0_1(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    for score in BAD_CSV_SCORES:
        path.write_text(f"domain,task_id,score\nos,a,1\nos,b,{score}\n")
        with pytest.raises(CompareInputError) as exc:
            load_side(path)
        assert f"{path}:3: column 'score': " in str(exc.value), score
    jsonl = tmp_path / "t.jsonl"
    for score in BAD_JSON_SCORES:
        jsonl.write_text(
            '{"domain": "os", "task_id": "a", "score": 1}\n'
            f'{{"domain": "os", "task_id": "b", "score": {score}}}\n'
        )
        with pytest.raises(CompareInputError) as exc:
            load_side(jsonl)
        assert f"{jsonl}:2: column 'score': " in str(exc.value), score
    # what stays readable: empty (unscored) and the edges of [0, 1]
    path.write_text("domain,task_id,score\nos,a,\nos,b,0\nos,c,1.0\nos,d, \n")
    jsonl.write_text(
        "".join(
            json.dumps({"domain": "os", "task_id": t, "score": s}) + "\n"
            for t, s in (("a", None), ("b", 0), ("c", 1), ("d", ""))
        )
    )
    for table in (path, jsonl):
        got = {s.task_id: (s.outcome, s.score) for s in load_side(table).samples}
        assert got == {
            "a": ("unscored", None),
            "b": ("failed", 0.0),
            "c": ("passed", 1.0),
            "d": ("unscored", None),
        }


def test_an_unreadable_result_json_is_named_and_its_task_unscored(tmp_path: Path) -> None:
    a = _run(tmp_path / "A", {"t1": 1.0, "t2": 0.0, "t3": 1.0})
    b = _run(tmp_path / "B", {"t1": 1.0, "t2": 1.0, "t3": 1.0})
    broken = task_dir(b, "Org/M", "os/t3") / "result.json"
    broken.write_text(broken.read_text()[:40])  # truncated
    side = load_side(b)
    t3 = [s for s in side.samples if s.key == "os/t3"]
    assert [(s.outcome, s.score) for s in t3] == [("unscored", None)]
    assert any(str(broken) in note and "os/t3 counted as unscored" in note for note in side.notes)
    pair = compare([load_side(a), side]).pairs[0]
    assert "os/t3" not in pair.only_a  # not "only A attempted": B's file is there, unreadable
    assert {f.key: f.kind for f in pair.flips}["os/t3"] == "scored on A only"
    proc = _cli(str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    assert f"warning: B: unreadable result file, os/t3 counted as unscored: {broken}" in proc.stderr
    assert str(broken) in proc.stdout and "os/t3" in proc.stdout


def test_an_unreadable_sample_result_keeps_its_sample(tmp_path: Path) -> None:
    run = tmp_path / "R"
    for k in (0, 1):
        write_result(
            task_dir(run, "Org/M", "os/t1", k),
            TaskResult(
                benchmark="osworld",
                case_id="os/t1",
                domain="os",
                task_id="t1",
                sample=k,
                outcome="passed",
                score=1.0,
                versions=Versions(model="Org/M"),
            ),
        )
    (task_dir(run, "Org/M", "os/t1", 1) / "result.json").write_bytes(b"\xff{")
    got = sorted((s.sample, s.outcome) for s in load_side(run).samples)
    assert got == [(0, "passed"), (1, "unscored")]
