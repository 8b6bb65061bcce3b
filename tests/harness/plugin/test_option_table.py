"""One declaration per option (``fixtures.run.config.option_spec``): the tests are generated from the
declarations and the profiles, so a new option, twin or profile field is covered as it is added.

- every field of every ``--profile``: the profile sets it when its options were not given, and an
  explicit option beats it (even one equal to the built-in default);
- every environment twin: it sets the option's field as the option would; the option beats it;
- every option is in ``pytest --help`` with its generated help (default, twins);
- no option is declared anywhere but in the settings sections (one ``addoption`` call, in the
  generator)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.run.config.options import ENV_TWINS, FIELDS, OPTIONS, Declared, help_text
from fixtures.run.config.profiles import PROFILES, Profile
from fixtures.run.config.settings import Settings
from tests.harness.helpers.parsed_settings import settings_of

ROOT = Path(__file__).resolve().parents[3]
IDENTITY = ("name", "description")
"""Profile fields that name the profile (recorded as ``protocols.profile``), not settings."""
SAMPLE_TEXT: dict[Any, str] = {int: "7", tuple[int, int]: "1280x720", str: "test_small"}
"""A valid option text per field type, besides the field's default (a new type needs one)."""


def _value(settings: Settings, d: Declared) -> Any:
    return getattr(getattr(settings, d.section), d.field)


def _by_flag(flag: str) -> Declared:
    return next(d for d in OPTIONS if d.flag == flag)


def _texts(d: Declared) -> list[str]:
    """Option texts for ``d``: its built-in default (the value once mistaken for "not given")
    and one other value."""
    texts = []
    default = d.info.default
    if isinstance(default, tuple) and len(default) == 2:
        texts.append("x".join(map(str, default)))
    elif isinstance(default, (int, str)) and not isinstance(default, bool):
        texts.append(str(default))
    base = d.info.annotation
    key = (
        base
        if base in SAMPLE_TEXT
        else next(  # exact, else inside ``X | None``
            (t for t in getattr(base, "__args__", ()) if t in SAMPLE_TEXT), None
        )
    )
    assert key is not None, f"{d.flag}: no sample text for {base}; add one to SAMPLE_TEXT"
    return [*texts, SAMPLE_TEXT[key]]


PROFILE_FIELDS = [
    pytest.param(p, f, id=f"{p}:{f}")
    for p in PROFILES
    for f in Profile.model_fields
    if f not in IDENTITY
]


@pytest.mark.parametrize(("profile", "field"), PROFILE_FIELDS)
def test_every_profile_field_is_set_unless_an_explicit_option_beats_it(
    profile: str, field: str, tmp_path: Path
) -> None:
    prof = PROFILES[profile]
    links = [d for d in FIELDS if d.profile is not None and d.profile.field == field]
    assert links, f"Profile.{field} sets nothing: annotate a settings field FromProfile({field!r})"
    for root in ((), ("--osworld-root", str(tmp_path))):
        for d in links:
            assert d.profile is not None
            expected = prof.value(field, osworld_root=bool(root))
            if expected is None:  # the profile leaves the field alone: its default stands
                expected = _value(settings_of(*root), d)
            assert _value(settings_of("--profile", profile, *root), d) == expected
            beaten_by = [f for f in (d.flag, *d.profile.unless) if f]
            assert beaten_by, f"{d.section}.{d.field}: no option beats the profile"
            default = _value(settings_of(*root), d)
            differs = False
            for flag in beaten_by:
                for text in _texts(_by_flag(flag)):
                    alone = _value(settings_of(*root, flag, text), d)
                    given = _value(settings_of("--profile", profile, *root, flag, text), d)
                    assert given == alone, (profile, field, flag, text)
                    differs |= given != expected
            # the test proves something: some explicit value undid the profile's (unless the
            # profile's value is the default, which nothing can tell apart)
            assert differs or expected == default, (profile, field)


def test_the_reported_case_explicit_max_steps_100_with_os_helix() -> None:
    s = settings_of("--profile", "os-helix", "--max-steps", "100", "--image-budget", "3")
    assert (s.agent.max_steps, s.agent.image_budget) == (100, 3)


TWIN_SAMPLES: dict[str, tuple[str, str | None]] = {
    "--osworld-root": ("/tmp/osworld-a", "/tmp/osworld-b"),
    "--provider": ("docker", "local"),
    "--vm-url": ("http://10.0.0.1:5000", "http://10.0.0.2:5000"),
    "--desktop-memory": ("1G", "2G"),
    "--desktop-pids": ("200", "300"),
    "--desktop-tmp": ("64M", "128M"),
    "--desktop-cpus": ("1.5", "0.5"),
    "--base-url": ("http://a:8000/v1", "http://b:8000/v1"),
    "--model": ("m-a", "m-b"),
    "--api-key": ("key-a", "key-b"),
    "--vm-proxy": ("http://127.0.0.1:3128", "http://127.0.0.1:9999"),
    "--net-gate": ("1", None),
    "--results-dir": ("/tmp/results-a", "/tmp/results-b"),
    "--judge-api-key": ("judge-a", "judge-b"),
    "--spare-desktop": ("on", "off"),
    "--setup-ahead": ("off", "on"),
    "--score-behind": ("off", "on"),
    "--ray-address": ("10.0.0.1:6379", "auto"),
    "--ray-desktop": ("docker", "local"),
    "--ray-resource": ("osworld_vm", "desktop"),
    "--ray-resource-amount": ("2", "0.5"),
    "--ray-placement": ("default", "spread"),
    "--serve-device": ("cpu", "gpu"),
    "--vllm": ("/opt/vllm/bin/python", "/usr/bin/vllm"),
}
"""flag -> (a twin's value, a different option value; None: a switch, given bare)."""


def _args(flag: str, text: str | None) -> tuple[str, ...]:
    return (flag,) if text is None else (flag, text)


@pytest.mark.parametrize(
    "dest, twin", [(dest, twin) for dest, twins in ENV_TWINS.items() for twin in twins]
)
def test_every_environment_twin_sets_its_field_and_the_option_beats_it(
    dest: str, twin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    d = next(d for d in OPTIONS if d.opt is not None and d.opt.name == dest)
    assert d.flag in TWIN_SAMPLES, f"{d.flag}: add sample values to TWIN_SAMPLES"
    env_text, option_text = TWIN_SAMPLES[d.flag]
    switch = option_text is None
    for name in (n for names in ENV_TWINS.values() for n in names):
        monkeypatch.delenv(name, raising=False)
    as_option = _value(settings_of(*_args(d.flag, None if switch else env_text)), d)
    other = _value(settings_of(*_args(d.flag, option_text)), d)
    monkeypatch.setenv(twin, env_text)
    from_twin = _value(settings_of(), d)
    if switch:  # a switch's twin takes 1/0: 1 is the switch given, 0 not given
        assert from_twin is True and as_option is True
        monkeypatch.setenv(twin, "0")
        assert _value(settings_of(), d) is False
        return
    assert from_twin == as_option != other
    assert _value(settings_of(*_args(d.flag, option_text)), d) == other  # the option wins


def test_a_bad_twin_value_names_the_option_and_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOLO_DESKTOP_CPUS", "lots")
    with pytest.raises(
        pytest.UsageError,
        match=r"^--desktop-cpus \(from HOLO_DESKTOP_CPUS\): "
        r"desktop CPU limit",
    ):
        settings_of()
    monkeypatch.setenv("HOLO_NET_GATE", "maybe")
    with pytest.raises(pytest.UsageError, match=r"^--net-gate \(from HOLO_NET_GATE\): "):
        settings_of("--desktop-cpus", "1")


def test_every_option_is_in_pytest_help_with_its_generated_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    section = text[text.index("holo-bench: computer-use benchmark suite") :].split("\n\n", 1)[0]
    for d in OPTIONS:
        assert d.opt is not None
        match = re.search(
            rf"^  {re.escape(d.opt.flag)}(?=[=\s])[^\n]*\n?(?: {{20,}}\S[^\n]*\n?)*", section, re.M
        )
        assert match, f"{d.opt.flag} is not in pytest --help"
        shown = "".join(match.group(0).split())
        assert "".join(help_text(d).split()) in shown, (d.opt.flag, match.group(0))
        for twin in d.opt.env:
            assert twin in match.group(0), (d.opt.flag, twin)


def test_no_option_is_declared_outside_the_settings_sections() -> None:
    """``addoption`` is called once, by the generator; the plugin's hook only calls it."""
    generator = ROOT / "fixtures" / "run" / "config" / "options.py"
    sources = [
        p for pkg in ("fixtures", "computer_env", "holo_agent") for p in (ROOT / pkg).rglob("*.py")
    ] + list(ROOT.glob("tests/**/conftest.py"))
    declaring = [
        p.relative_to(ROOT).as_posix()
        for p in sources
        if re.search(r"\baddoption\(|\bgetgroup\(|\baddini\(", p.read_text()) and p != generator
    ]
    assert declaring == [], f"options declared outside {generator.name}: {declaring}"
    assert generator.read_text().count("addoption(") == 1
    hooks = [p for p in sources if "def pytest_addoption" in p.read_text()]
    assert [p.relative_to(ROOT).as_posix() for p in hooks] == ["fixtures/run/plugin.py"]
    body = hooks[0].read_text().split("def pytest_addoption", 1)[1].split("\n\n", 1)[0]
    assert "add_options(parser)" in body and body.count("\n") <= 2, body


SUITE_OPTIONS = """
--osworld-root --task-list --domain --prefetch --cache-dir --settle --check-evaluators --audit
--audit-exploits --provider --vm-url --docker-image --vm-path --screen --unsandboxed
--desktop-memory --desktop-pids --desktop-tmp --desktop-cpus --base-url --model --api-key --serve
--gpus --serve-arg --serve-device --vllm --endpoint-retries --endpoint-backoff --request-timeout --reference-faults
--vm-proxy --net-gate --net-probe-url --net-wait --max-steps --temperature --reasoning-effort
--prompt --image-budget --max-image-width --samples --results-dir --run --resume --compare-to
--pass-threshold --game-pass-threshold --infra-reruns --infra-rerun-delay --order --live --watch
--watch-port --games --loads --seeds --pacing --turn-seconds --turn-tokens --profile
--code-actions --code-timeout --judge-url --judge-model --judge-api-key --judge-timeout
--score-by --synthetic-dir --verifier-timeout --spare-desktop --setup-ahead --score-behind
--ray-address
--ray-desktop --ray-resource --ray-resource-amount --ray-placement""".split()
"""The suite's options before the table: none may be lost."""


def test_the_table_keeps_every_option_once_with_its_twins() -> None:
    flags = [d.opt.flag for d in OPTIONS if d.opt is not None]
    dests = [d.opt.name for d in OPTIONS if d.opt is not None]
    twins = [t for names in ENV_TWINS.values() for t in names]
    assert sorted(flags) == sorted(SUITE_OPTIONS)
    assert len(set(dests)) == len(dests) and len(set(twins)) == len(twins)
    assert set(twins) == {
        "OSWORLD_ROOT",
        "HOLO_BASE_URLS",
        "HOLO_BASE_URL",
        "HOLO_MODEL",
        "HOLO_API_KEY",
        "OPENAI_API_KEY",
        "HOLO_VM_PROXY",
        "HOLO_NET_GATE",
        "HOLO_PROVIDER",
        "HOLO_VM_URLS",
        "HOLO_RESULTS_DIR",
        "HOLO_DESKTOP_MEMORY",
        "HOLO_DESKTOP_PIDS",
        "HOLO_DESKTOP_TMP",
        "HOLO_DESKTOP_CPUS",
        "HOLO_JUDGE_API_KEY",
        "HOLO_SPARE_DESKTOP",
        "HOLO_SETUP_AHEAD",
        "HOLO_SCORE_BEHIND",
        "HOLO_SERVE_DEVICE",
        "HOLO_VLLM",
        "HOLO_RAY_ADDRESS",
        "HOLO_RAY_DESKTOP",
        "HOLO_RAY_RESOURCE",
        "HOLO_RAY_RESOURCE_AMOUNT",
        "HOLO_RAY_PLACEMENT",
    }
