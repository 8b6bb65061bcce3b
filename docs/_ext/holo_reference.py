"""The reference pages, generated from the code at every build so that they cannot drift.

Sphinx runs :func:`generate` before it reads the sources; it writes Markdown pages under
``docs/reference/generated/`` (git-ignored, rewritten only when their text changed):

- ``options.md``: every option of the ``holo-bench`` group exactly as ``pytest --help`` gets
  it (the plugin's own ``pytest_addoption`` on a fresh parser), each with what its one
  declaration says (:mod:`fixtures.run.config.option_spec`): default, choices, environment
  twins, the ``--profile`` field, the ``Settings`` field;
- ``schema-<name>.md``: one page per entry of ``holo_schemas`` in ``docs/conf.py`` (a file
  name and the pydantic model of one of its records), every field with its type, default and
  description, nested models below it;
- ``entry-points.md``: every module of the three packages that runs as ``python -m`` and every
  script in ``scripts/``, with its docstring and, where it parses arguments, its ``--help``;
- ``markers.md``: the markers declared in ``pytest.ini``;
- ``api-<package>.md``: one page per entry of ``holo_api`` in ``docs/conf.py``: the package's
  docstring, then autodoc of every name in its ``__all__``.

``python docs/_ext/holo_reference.py`` writes the same pages without Sphinx (to read them).
"""

from __future__ import annotations

import argparse
import ast
import configparser
import contextlib
import importlib
import importlib.util
import inspect
import io
import re
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Union

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "reference" / "generated"
PACKAGES = ("computer_env", "holo_agent", "fixtures")
ROLE = re.compile(r":(?:py:)?(mod|class|func|meth|attr|data|exc|obj|const):`([^`]+)`")


# ---------------------------------------------------------------------------------------------
# helpers


def md_roles(text: str) -> str:
    """Sphinx roles of a docstring (``:class:`X```) as MyST roles (``{class}`X```)."""
    return ROLE.sub(lambda m: "{py:%s}`%s`" % (m.group(1), m.group(2)), text)


def plain(text: str) -> str:
    """Markdown text: Sphinx roles as MyST roles, ``<`` outside code escaped."""
    parts = re.split(r"(`[^`]*`)", md_roles(text))
    return "".join(p if p.startswith("`") else p.replace("<", "\\<") for p in parts)


def cell(text: str) -> str:
    """Text for one cell of a Markdown table: one line, pipes escaped, and ``<`` outside code
    escaped (``<uuid>`` would be read as an HTML tag)."""
    text = md_roles(" ".join(text.split()))
    parts = re.split(r"(`[^`]*`)", text)
    text = "".join(p if p.startswith("`") else p.replace("<", "\\<") for p in parts)
    return text.replace("|", "\\|")


def code(text: str) -> str:
    """An inline code span that survives backticks inside."""
    ticks = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def write(path: Path, text: str) -> None:
    """Write only when the text changed (so that Sphinx re-reads only what changed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def header(title: str, source: str) -> list[str]:
    return [
        f"# {title}",
        "",
        "```{note}",
        f"Generated from {source} at every build of the site: edit the code, not this page.",
        "```",
        "",
    ]


# ---------------------------------------------------------------------------------------------
# options


def options_page() -> str:
    """Every option of ``pytest --help``'s holo-bench group, from its one declaration."""
    from _pytest.config.argparsing import Parser

    from fixtures.run import plugin
    from fixtures.run.config import options as opts

    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    group = next(g for g in parser._groups if g.name == opts.GROUP)
    declared = {d.opt.name: d for d in opts.OPTIONS if d.opt is not None}
    sections: dict[str, list[tuple[Any, Any]]] = {}
    for option in group.options:
        dest = option.attrs()["dest"]
        d = declared.get(dest)
        sections.setdefault(d.section if d else "other", []).append((option, d))

    from fixtures.run.config.settings import SECTIONS

    lines = header("Options", "the option declarations (`fixtures/run/config/settings*.py`)")
    lines += [
        f'The suite\'s {len(group.options)} options, shown under "{opts.GROUP}" in '
        "`pytest --help`. Each is declared once, as a field of a section of the run's "
        "`Settings` ({py:mod}`fixtures.run.config.option_spec`); the parser, `pytest --help` "
        "and this page come from that declaration. An option given on the command line beats "
        "its environment twin, and both beat a `--profile`.",
        "",
        "| option | section | default | environment twin |",
        "|---|---|---|---|",
    ]
    for section, items in sections.items():
        for o, d in items:
            flag = o.names()[0]
            default = opts.default_text(d) if d is not None else None
            if d is not None and opts.is_flag(d):
                default = "off"
            twins = " ".join(code(e) for e in d.opt.env) if d is not None and d.opt else ""
            lines.append(
                f"| [{code(flag)}](#{anchor(flag)}) | [{section}](#section-{section}) "
                f"| {_default_cell(d, default)} | {twins} |"
            )
    lines.append("")
    for section, items in sections.items():
        model = SECTIONS.get(section)
        lines += [f"({'section-' + section})=", f"## `{section}`", ""]
        if model is not None and model.__doc__:
            lines += [
                md_roles(inspect.cleandoc(model.__doc__)),
                "",
                f"Settings model: {{py:class}}`{model.__module__}.{model.__name__}`.",
                "",
            ]
        for option, d in items:
            lines += option_entry(option, d, opts)
    return "\n".join(lines) + "\n"


def _default_cell(d: Any, default: str | None) -> str:
    """A default in the summary table: a value as code, a description as text."""
    if default is None:
        return ""
    if d is not None and d.opt is not None and d.opt.default_text is not None:
        return cell(default)
    return code(default)


def anchor(flag: str) -> str:
    return "option-" + flag.lstrip("-")


def option_entry(option: Any, d: Any, opts: Any) -> list[str]:
    attrs = option.attrs()
    flag = option.names()[0]
    metavar = attrs.get("metavar")
    switch = d is not None and opts.is_flag(d)
    usage = flag if switch else f"{flag} {metavar or 'VALUE'}"
    lines = [f"({anchor(flag)})=", f"### {code(usage)}", ""]
    if d is None:
        return lines + [md_roles(attrs.get("help", "")), ""]
    assert d.opt is not None
    lines += [plain(d.opt.help) + ".", ""]
    rows: list[tuple[str, str]] = []
    kind = "switch" if opts.is_flag(d) else "repeatable" if d.opt.repeat else "value"
    rows.append(("kind", kind))
    default = opts.default_text(d)
    if opts.is_flag(d):
        default = "off"
    if default is None:
        rows.append(("default", "none"))
    elif d.opt.default_text is not None and not opts.is_flag(d):
        rows.append(("default", plain(default)))
    else:
        rows.append(("default", code(default)))
    allowed = opts.choices(d.info.annotation)
    if allowed:
        rows.append(("choices", ", ".join(code(c) for c in allowed)))
    rows.append(("environment", " / ".join(code(e) for e in d.opt.env) if d.opt.env else "no twin"))
    if d.profile is not None:
        unless = (
            f" (unless {', '.join(code(u) for u in d.profile.unless)} given)"
            if d.profile.unless
            else ""
        )
        rows.append(("--profile", f"sets it from the profile's {code(d.profile.field)}{unless}"))
    rows.append(("settings field", code(f"settings.{d.section}.{d.field}")))
    lines += [f"- **{k}**: {v}" for k, v in rows]
    return lines + [""]


# ---------------------------------------------------------------------------------------------
# schemas


def field_notes(model: type) -> dict[str, str]:
    """A model's field docstrings (a string right after the field) and, for fields without
    one, the comment lines right above the field."""
    notes: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if klass.__module__ in ("builtins",) or klass.__module__.startswith("pydantic"):
            continue
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        source = inspect.cleandoc("\n" + source) if source.startswith(" ") else source
        lines = source.splitlines()
        tree = ast.parse(source)
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for i, node in enumerate(body):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            name = node.target.id
            after = body[i + 1] if i + 1 < len(body) else None
            if (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                notes[name] = inspect.cleandoc(after.value.value)
                continue
            comments = []
            j = node.lineno - 2
            while j >= 0 and lines[j].strip().startswith("#"):
                comments.insert(0, lines[j].strip().lstrip("#").strip())
                j -= 1
            if comments:
                notes[name] = " ".join(comments)
    return notes


def is_model(tp: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(tp, type) and issubclass(tp, BaseModel)


def nested_models(annotation: Any) -> Iterator[type]:
    if is_model(annotation):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from nested_models(arg)


def type_text(annotation: Any) -> str:
    """A field type as a reader wants it: ``float | None``, ``list[NetCheck]``, ``"a" | "b"``."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if origin is Literal:
        return " \\| ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join(type_text(a) for a in args)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            return f"tuple[{type_text(args[0])}, ...]"
        return f"{name}[{', '.join(type_text(a) for a in args)}]"
    if is_model(annotation):
        return f"[{annotation.__name__}](#{{anchor}}-{annotation.__name__.lower()})"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def default_of(info: Any) -> str:
    from pydantic_core import PydanticUndefined

    if info.is_required():
        return "required"
    if info.default_factory is not None:
        try:
            value = info.default_factory()
        except TypeError:
            return "computed"
        if is_model(type(value)):
            return "see below"
        return code(_json(value))
    if info.default is PydanticUndefined:
        return "required"
    return code(_json(info.default))


def _json(value: Any) -> str:
    """A default as the file holds it (``null``, ``""``, ``[]``)."""
    import json

    try:
        return json.dumps(value)
    except TypeError:
        return repr(value)


def schema_page(name: str, target: str, slug: str, note: str) -> str:
    module_name, _, qual = target.partition(":")
    model = getattr(importlib.import_module(module_name), qual)
    lines = header(f"`{name}`", f"the pydantic model {{py:class}}`{module_name}.{qual}`")
    if note:
        lines += [note, ""]
    seen: list[type] = []
    queue = [model]
    while queue:
        m = queue.pop(0)
        if m in seen:
            continue
        seen.append(m)
        for info in m.model_fields.values():
            queue += [n for n in nested_models(info.annotation) if n not in seen]
    for m in seen:
        label = f"{slug}-{m.__name__.lower()}"
        title = f"`{m.__name__}`" + (" (one record)" if m is model else "")
        lines += [f"({label})=", f"## {title}", ""]
        if m.__doc__ and m.__doc__ is not getattr(m.__mro__[1], "__doc__", None):
            lines += [md_roles(inspect.cleandoc(m.__doc__)), ""]
        lines += [
            f"Model: {{py:class}}`{m.__module__}.{m.__name__}`"
            f"{'; extra fields are refused' if m.model_config.get('extra') == 'forbid' else ''}.",
            "",
            "| field | type | default | description |",
            "|---|---|---|---|",
        ]
        notes = field_notes(m)
        for fname, info in m.model_fields.items():
            key = info.serialization_alias or info.alias or fname
            desc = info.description or notes.get(fname, "")
            extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
            if extra.get("impact"):
                desc = f"{desc} (*impact*: {extra['impact']})"
            tp = type_text(info.annotation).replace("{anchor}", slug)
            lines.append(f"| `{key}` | {tp} | {default_of(info)} | {cell(desc)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# entry points


class _Help(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _capture_help(main: Any, prog: str) -> str | None:
    """The ``--help`` of a ``main`` that parses with argparse, caught when it parses (so
    nothing after the parsing runs)."""
    real_parse = argparse.ArgumentParser.parse_known_args

    def caught(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Help(self)

    argparse.ArgumentParser.parse_known_args = caught  # type: ignore[method-assign]
    old_argv = sys.argv
    sys.argv = [prog, "--help"]
    try:
        params = inspect.signature(main).parameters
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            if params:
                main(["--help"])
            else:
                main()
    except _Help as h:
        return _format(h.parser, prog)
    except BaseException:  # noqa: BLE001 - a main that does not parse arguments first
        return None
    finally:
        argparse.ArgumentParser.parse_known_args = real_parse  # type: ignore[method-assign]
        sys.argv = old_argv
    return None


def _format(parser: argparse.ArgumentParser, prog: str) -> str:
    import os

    os.environ["COLUMNS"] = "100"
    if parser.prog in ("holo_reference.py", "__main__.py", "-c") or not parser.prog:
        parser.prog = prog
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                text += f"\n--- {prog} {name} ---\n" + sub.format_help()
    return text


def _main_modules() -> list[tuple[str, Path]]:
    """(``python -m`` name, file) of every module of the packages that runs as a program."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            if path.name == "__main__.py" or re.search(
                r"^if __name__ == [\"']__main__[\"']:", text, re.M
            ):
                parts = path.relative_to(ROOT).with_suffix("").parts
                if parts[-1] == "__main__":
                    parts = parts[:-1]
                found.append((".".join(parts), path))
    return found


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text())) or ""


def _main_source(path: Path) -> tuple[str, Path] | None:
    """Where a ``main`` lives: the module itself, or for a ``__main__`` without a guard (which
    runs the program when imported), the module it imports ``main`` from."""
    text = path.read_text()
    if re.search(r"^if __name__ == [\"']__main__[\"']:", text, re.M):
        return None
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and any(a.name == "main" for a in node.names)
        ):
            return node.module, ROOT / Path(*node.module.split(".")).with_suffix(".py")
    return None


def _help_of_module(name: str, path: Path) -> str | None:
    module_name = name if path.name != "__main__.py" else name + ".__main__"
    if path.name == "__main__.py" and (elsewhere := _main_source(path)):
        module_name, path = elsewhere
    elif path.name == "__main__.py" and "__name__ ==" not in path.read_text():
        return None  # importing it would run it
    if "ArgumentParser" not in path.read_text():
        return None
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - an optional dependency missing here
        return None
    main = getattr(module, "main", None)
    return _capture_help(main, f"python -m {name}") if callable(main) else None


def _help_of_script(path: Path) -> str | None:
    if "ArgumentParser" not in path.read_text():
        return None
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception:  # noqa: BLE001
        return None
    finally:
        sys.path.remove(str(path.parent))
    main = getattr(module, "main", None)
    return _capture_help(main, f"python scripts/{path.name}") if callable(main) else None


def _rst_ok(text: str) -> bool:
    """Does docutils read ``text`` without a complaint (Sphinx's roles taken as literals)?"""
    from docutils.core import publish_doctree

    stream = io.StringIO()
    publish_doctree(
        ROLE.sub(r"``\2``", text),
        settings_overrides={"warning_stream": stream, "report_level": 2, "halt_level": 5},
    )
    return not stream.getvalue()


def _rst_block(docstring: str) -> list[str]:
    """A module docstring: rendered where it is valid reStructuredText, else shown as it is
    (a program's docstring is often its usage text)."""
    if not docstring:
        return []
    if _rst_ok(docstring):
        return ["````{eval-rst}", docstring, "````", ""]
    return ["```text", docstring, "```", ""]


def entry_points_page(internal: set[str]) -> str:
    lines = header(
        "Entry points",
        "the packages' `__main__` modules, the modules with a "
        '`__name__ == "__main__"` guard and `scripts/`',
    )
    lines += [
        "Every program of the project: what `python -m NAME` runs, and the scripts "
        "under `scripts/` (`python scripts/NAME.py`). Each says what it is for in its "
        "docstring; where it parses arguments, its `--help` follows.",
        "",
    ]
    modules = _main_modules()
    unknown = internal - {n for n, _ in modules}
    if unknown:
        raise ValueError(f"holo_internal_programs names no program: {sorted(unknown)}")
    public = [(n, p) for n, p in modules if n not in internal]
    hidden = [(n, p) for n, p in modules if n in internal]
    lines += ["## `python -m` programs", ""]
    for name, path in public:
        lines += [f"### `python -m {name}`", ""] + _rst_block(_docstring(path))
        usage = _help_of_module(name, path)
        if usage:
            lines += ["```text", usage.rstrip(), "```", ""]
    lines += [
        "## Started by the harness",
        "",
        "Programs the harness or a desktop starts on its own (a child process, a "
        "sandbox's init, the scoring process); listed so that a process list can be "
        "read. They are not meant to be run by hand.",
        "",
    ]
    for name, path in hidden:
        lines += [f"### `python -m {name}`", ""] + _rst_block(_docstring(path))
    lines += ["## Scripts", ""]
    for path in sorted((ROOT / "scripts").iterdir()):
        if path.suffix not in (".py", ".sh") or path.name.startswith("_"):
            continue
        runner = "python" if path.suffix == ".py" else "bash"
        lines += [f"### `{runner} scripts/{path.name}`", ""]
        if path.suffix == ".py":
            lines += _rst_block(_docstring(path))
            usage = _help_of_script(path)
            if usage:
                lines += ["```text", usage.rstrip(), "```", ""]
        else:
            comment = [
                line[1:].strip()
                for line in path.read_text().splitlines()[1:]
                if line.startswith("#")
            ]
            lines += [" ".join(_leading(comment)), ""]
    return "\n".join(lines) + "\n"


def _leading(comment: list[str]) -> list[str]:
    """The first block of a script's header comment."""
    out = []
    for line in comment:
        if not line:
            break
        out.append(line)
    return out or ["(no header comment)"]


# ---------------------------------------------------------------------------------------------
# markers


def markers_page() -> str:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "pytest.ini")
    lines = header("Markers", "`pytest.ini`")
    lines += [
        'Select with `-m`, e.g. `pytest tests/osworld -m "smoke and not network"`. '
        "The task markers (domain, `infeasible`, `proxy`, `gdrive`, `network`, "
        "`download`, `smoke`) are set at collection from each task's file; the others "
        "mark the project's own tests.",
        "",
        "| marker | meaning |",
        "|---|---|",
    ]
    for line in ini["pytest"]["markers"].strip().splitlines():
        name, _, meaning = line.strip().partition(":")
        lines.append(f"| `{name.strip()}` | {cell(meaning.strip())} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# public API


def api_page(package: str) -> str:
    """reStructuredText (autodoc writes reStructuredText, which a Markdown page would not
    parse): the package's docstring, then every name of its ``__all__``."""
    module = importlib.import_module(package)
    title = f"``{package}``"
    lines = [
        title,
        "=" * len(title),
        "",
        ".. note::",
        "",
        f"   Generated from ``{package}.__all__`` at every build of the site.",
        "",
        f".. automodule:: {package}",
        "   :no-members:",
        "",
    ]
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        full = f"{package}.{name}"
        if inspect.isclass(obj):
            kind = "autoexception" if issubclass(obj, BaseException) else "autoclass"
            lines += [f".. {kind}:: {full}", "   :members:", ""]
        elif callable(obj) and not typing.get_origin(obj):
            lines += [f".. autofunction:: {full}", ""]
        else:
            lines += _data(package, name, obj)
    return "\n".join(lines) + "\n"


def _data(package: str, name: str, obj: Any) -> list[str]:
    """A constant or type alias: its own docstring (the string after it where it is defined),
    never the docstring of its type (``dict``'s)."""
    from sphinx.pycode import ModuleAnalyzer

    source = package
    for node in ast.walk(
        ast.parse(Path(importlib.import_module(package).__file__ or "").read_text())
    ):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and any(a.name == name for a in node.names)
        ):
            source = node.module
    docs = ModuleAnalyzer.for_module(source).find_attr_docs().get(("", name))
    lines = [f".. py:data:: {package}.{name}"]
    if typing.get_origin(obj) is None and not isinstance(obj, typing.TypeVar):
        lines.append(f"   :type: {type(obj).__name__}")
    lines.append("")
    text = [f"   {line}" if line else "" for line in (docs or [])]
    return lines + text + ["", f"   Defined in :mod:`{source}`.", ""]


# ---------------------------------------------------------------------------------------------


def generate_all(schemas: list[tuple[str, str, str]], api: list[str], internal: set[str]) -> None:
    """Write every generated page (``schemas``: (file name, ``module:Model``, a note))."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    write(OUT / "options.md", options_page())
    keep = {"options.md", "entry-points.md", "markers.md"}
    for name, target, note in schemas:
        slug = "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        page = f"{slug}.md"
        keep.add(page)
        write(OUT / page, schema_page(name, target, slug, note))
    for package in api:
        page = f"api-{package.replace('.', '-')}.rst"
        keep.add(page)
        write(OUT / page, api_page(package))
    write(OUT / "entry-points.md", entry_points_page(internal))
    write(OUT / "markers.md", markers_page())
    for stale in [*OUT.glob("*.md"), *OUT.glob("*.rst")]:
        if stale.name not in keep:
            stale.unlink()


def _generate(app: Any) -> None:
    cfg = app.config
    generate_all(list(cfg.holo_schemas), list(cfg.holo_api), set(cfg.holo_internal_programs))


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("holo_schemas", [], "env")
    app.add_config_value("holo_api", [], "env")
    app.add_config_value("holo_internal_programs", [], "env")
    app.connect("builder-inited", _generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "docs"))
    import conf  # type: ignore[import-not-found]

    generate_all(conf.holo_schemas, conf.holo_api, set(conf.holo_internal_programs))
    print(f"written under {OUT}")
