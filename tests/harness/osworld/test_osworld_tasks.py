"""Task collection against OSWorld's real task files (counts, ids, markers, errors) and the
placeholder substitution of ``computer_env.osworld.context``."""

from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

import pytest

from computer_env.osworld import (
    Task,
    TaskLoadError,
    load_builtin_tasks,
    load_tasks,
    substitute,
    task_markers,
)
from computer_env.osworld.catalog.tasks import builtin_root, parse_task
from computer_env.osworld.context import default_vars
from tests.harness.helpers.suite import OSWORLD_DATA

DATA = OSWORLD_DATA

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="OSWorld task data not present")

ALL_COUNTS = {
    "chrome": 46,
    "gimp": 26,
    "libreoffice_calc": 47,
    "libreoffice_impress": 47,
    "libreoffice_writer": 23,
    "multi_apps": 101,
    "os": 24,
    "thunderbird": 15,
    "vlc": 17,
    "vs_code": 23,
}


@pytest.mark.parametrize(
    "task_list,total",
    [("test_all", 369), ("test_nogdrive", 361), ("test_small", 39), ("test_infeasible", 28)],
)
def test_list_counts(task_list: str, total: int) -> None:
    tasks = load_tasks(DATA, task_list)
    assert len(tasks) == total
    assert len({t.case_id for t in tasks}) == total


def test_per_domain_counts_and_ids() -> None:
    tasks = load_tasks(DATA)
    assert dict(collections.Counter(t.domain for t in tasks)) == ALL_COUNTS
    nogdrive = collections.Counter(t.domain for t in load_tasks(DATA, "test_nogdrive"))
    assert nogdrive["multi_apps"] == 93 and sum(nogdrive.values()) == 361
    for task in tasks:
        assert task.case_id == f"{task.domain}/{task.id}"
        assert task.path is not None and task.path.stem == task.id


def test_checkout_root_and_examples_folder_are_both_accepted(tmp_path: Path) -> None:
    (tmp_path / "OSWorld").mkdir()
    (tmp_path / "OSWorld" / "evaluation_examples").symlink_to(DATA)
    via_checkout = load_tasks(tmp_path / "OSWorld", "test_small")
    assert [t.case_id for t in via_checkout] == [t.case_id for t in load_tasks(DATA, "test_small")]


def test_domains_filter_and_custom_list(tmp_path: Path) -> None:
    assert len(load_tasks(DATA, domains=["os", "vlc"])) == 24 + 17
    small = json.loads((DATA / "test_small.json").read_text())
    custom = tmp_path / "mine.json"
    custom.write_text(json.dumps({"os": small["os"]}))
    tasks = load_tasks(DATA, str(custom))
    assert [t.id for t in tasks] == small["os"] and all(t.domain == "os" for t in tasks)


def test_markers() -> None:
    tasks = load_tasks(DATA)
    marks = {t.case_id: task_markers(t) for t in tasks}
    count = collections.Counter(m for ms in marks.values() for m in ms)
    assert count["infeasible"] == 29
    assert count["proxy"] == 52
    assert count["gdrive"] == 8
    gdrive = {c for c, ms in marks.items() if "gdrive" in ms}
    all_ids = {t.case_id for t in tasks}
    nogdrive = {t.case_id for t in load_tasks(DATA, "test_nogdrive")}
    assert gdrive == all_ids - nogdrive
    downloads = {t.case_id for t in tasks if any(s.type == "download" for s in t.config)}
    assert len(downloads) == 260
    download = {c for c, ms in marks.items() if "download" in ms}
    fetched = {
        t.case_id
        for t in tasks
        if any(s.type == "download" for s in t.evaluator.postconfig)
        or any(g.get("type") == "cloud_file" for g in t.evaluator.getter_specs())
    }
    assert download == downloads | fetched  # setup/postconfig downloads, evaluator files
    # network: the internet while the task runs (not files a prefetched cache can hold)
    network = {c for c, ms in marks.items() if "network" in ms}
    assert gdrive <= network
    assert {c for c, ms in marks.items() if "proxy" in ms} <= network
    assert "os/94d95f96-9699-4208-98ba-3c3119edf9c2" in network  # installs Spotify
    assert "vlc/bba3381f-b5eb-4439-bd9e-80c22218d5a7" in network  # streams from a URL
    assert not network & {
        "os/28cc3b7e-b194-4bc9-8353-d04c0f4d56d2",  # volume: offline
        "libreoffice_calc/0bf05a7d-b28b-44d2-955a-50b41e24012a",
    }  # a download
    assert 60 <= len(network) <= 100
    assert all(ms[0] == c.split("/")[0] for c, ms in marks.items())
    listed_infeasible = {t.case_id for t in load_tasks(DATA, "test_infeasible")}
    assert listed_infeasible <= {c for c, ms in marks.items() if "infeasible" in ms}
    some = tasks[0]
    assert "smoke" in task_markers(some, smoke_ids={some.id})
    assert "smoke" in task_markers(some, smoke_ids={some.case_id})
    assert "smoke" not in task_markers(some)


def _copy_domain(tmp_path: Path, domain: str) -> Path:
    root = tmp_path / "evaluation_examples"
    shutil.copytree(DATA / "examples" / domain, root / "examples" / domain)
    ids = sorted(p.stem for p in (root / "examples" / domain).glob("*.json"))
    (root / "test_all.json").write_text(json.dumps({domain: ids}))
    return root


def test_broken_task_file_names_file_and_field(tmp_path: Path) -> None:
    root = _copy_domain(tmp_path, "os")
    victim = sorted((root / "examples" / "os").glob("*.json"))[3]
    data = json.loads(victim.read_text())
    data["evaluator"]["conj"] = "xor"
    victim.write_text(json.dumps(data))
    with pytest.raises(TaskLoadError) as info:
        load_tasks(root)
    assert str(victim) in str(info.value) and "evaluator.conj" in str(info.value)

    del data["evaluator"]
    victim.write_text(json.dumps(data))
    with pytest.raises(TaskLoadError, match=r"field evaluator: Field required"):
        load_tasks(root)

    victim.write_text("{not json")
    with pytest.raises(TaskLoadError, match="not valid JSON"):
        load_tasks(root)

    victim.unlink()
    with pytest.raises(TaskLoadError, match="task file not found"):
        load_tasks(root)


def test_missing_list_and_bad_root(tmp_path: Path) -> None:
    with pytest.raises(TaskLoadError, match="task list not found"):
        load_tasks(DATA, "test_nonexistent")
    with pytest.raises(TaskLoadError, match="no examples/ directory"):
        load_tasks(tmp_path)


def test_unknown_fields_are_kept(tmp_path: Path) -> None:
    root = _copy_domain(tmp_path, "vlc")
    victim = sorted((root / "examples" / "vlc").glob("*.json"))[0]
    data = json.loads(victim.read_text())
    data["future_field"] = {"x": 1}
    data["evaluator"]["new_knob"] = [1, 2]
    data["config"][0]["when"] = "later"
    victim.write_text(json.dumps(data))
    task = next(t for t in load_tasks(root) if t.id == victim.stem)
    assert task.model_extra == {"future_field": {"x": 1}}
    assert task.evaluator.model_extra == {"new_knob": [1, 2]}
    assert task.config[0].model_extra == {"when": "later"}
    dumped = task.model_dump()
    assert dumped["future_field"] == {"x": 1}


def test_real_evaluator_shapes_parse() -> None:
    tasks = {t.id: t for t in load_tasks(DATA)}
    listed = [t for t in tasks.values() if isinstance(t.evaluator.func, list)]
    assert len(listed) == 51
    for t in listed:
        assert isinstance(t.evaluator.result, list)
        assert len(t.evaluator.result) == len(t.evaluator.funcs)
    assert sum(1 for t in tasks.values() if t.evaluator.conj == "or") >= 1
    assert sum(1 for t in tasks.values() if "config" not in t.model_fields_set) == 1
    assert any(isinstance(t.source, list) for t in tasks.values())


def test_parse_task_in_memory() -> None:
    task = parse_task(
        {"id": "x", "instruction": "do", "evaluator": {"func": "infeasible"}}, domain="demo"
    )
    assert isinstance(task, Task) and task.case_id == "demo/x"
    assert task_markers(task) == ["demo", "infeasible"]


@pytest.mark.skipif(
    not (builtin_root() / "test_all.json").is_file(),
    reason="the built-in task set is not there yet",
)
def test_builtin_tasks_load() -> None:
    tasks = load_builtin_tasks()
    assert tasks and len({t.case_id for t in tasks}) == len(tasks)


def test_substitute_deep_and_only_known_names() -> None:
    vars_ = default_vars(
        (1920, 1080), asset_url="http://127.0.0.1:8000/", guest_asset_url="http://10.0.0.1:8000"
    )
    obj = {
        "command": [
            "python",
            "-c",
            "pyautogui.click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF}); d={'a': 1}",
        ],
        "url": "{ASSET_URL}/f.xlsx",
        "nested": [{"u": "{GUEST_ASSET_URL}/p.html"}],
        "keep": "{UNKNOWN} {lower} {}",
        "n": 3,
        "pw": "echo {CLIENT_PASSWORD}",
    }
    out = substitute(obj, vars_)
    assert out["command"][2] == "pyautogui.click(960, 540); d={'a': 1}"
    assert out["url"] == "http://127.0.0.1:8000/f.xlsx"
    assert out["nested"][0]["u"] == "http://10.0.0.1:8000/p.html"
    assert out["keep"] == "{UNKNOWN} {lower} {}" and out["n"] == 3
    assert out["pw"] == "echo password"
    assert obj["url"] == "{ASSET_URL}/f.xlsx"  # input untouched
