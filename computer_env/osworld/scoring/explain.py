"""Say where a scored result differs from what was expected, from the two files the evaluator
read (kept in the case folder after scoring). It only explains; it never scores.

- spreadsheets (xlsx/xlsm via openpyxl, ods via pandas+odfpy): missing/extra sheets, then the
  cells that differ per sheet pair (``compare_table`` rules with ``sheet_idx0``/``sheet_idx1``
  pick the pairs, e.g. ``RI0``/``EI0``, ``RNSheet1``/``ENSheet1``; otherwise sheets by position);
- documents (docx via python-docx): paragraphs that differ, then tables' cells;
- csv and other text: the differing lines (unified diff);
- anything else: whether the bytes are the same.
"""

from __future__ import annotations

import csv
import difflib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["explain_files", "explain_table", "explain_docx", "explain_text", "LIMIT"]

LIMIT = 20
"""At most this many differences are listed per comparison (the count is always given)."""

_SHEETS = (".xlsx", ".xlsm", ".ods")
_TEXT = (
    ".txt",
    ".csv",
    ".tsv",
    ".md",
    ".json",
    ".py",
    ".sh",
    ".html",
    ".xml",
    ".conf",
    ".ini",
    ".yaml",
    ".yml",
    ".log",
    ".tex",
)


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        if value != value:  # NaN: an empty cell as pandas reads it
            return None
        if value.is_integer():
            return int(value)
        return round(value, 9)
    if isinstance(value, str) and value == "":
        return None
    return value


def _show(value: Any) -> str:
    return "empty" if value is None else repr(value)


def _col(n: int) -> str:
    name = ""
    while n:
        n, rem = divmod(n - 1, 26)
        name = chr(65 + rem) + name
    return name


def read_sheets(path: Path) -> dict[str, dict[tuple[int, int], Any]]:
    """sheet name -> {(row, col) (1-based): value} of the non-empty cells (a formula without a
    cached value shows as its formula text)."""
    if path.suffix.lower() == ".ods":
        import pandas as pd

        frames = pd.read_excel(path, engine="odf", sheet_name=None, header=None)
        return {
            name: {
                (r + 1, c + 1): v
                for (r, c), v in ((rc, _norm(x)) for rc, x in _cells(frame.values))
                if v is not None
            }
            for name, frame in frames.items()
        }
    import openpyxl

    values = openpyxl.load_workbook(path, data_only=True, read_only=False)
    formulas = openpyxl.load_workbook(path, data_only=False, read_only=False)
    out: dict[str, dict[tuple[int, int], Any]] = {}
    for ws in values.worksheets:
        fs = formulas[ws.title]
        cells: dict[tuple[int, int], Any] = {}
        for row in ws.iter_rows():
            for cell in row:
                value = _norm(cell.value)
                if value is None:
                    f = fs.cell(row=cell.row, column=cell.column).value
                    value = _norm(f) if isinstance(f, str) and f.startswith("=") else None
                if value is not None:
                    cells[(cell.row, cell.column)] = value
        out[ws.title] = cells
    return out


def _cells(values: Any) -> Any:
    for r, row in enumerate(values):
        for c, x in enumerate(row):
            yield (r, c), x


def _pick(sheets: dict[str, Any], spec: Any, side: str) -> str | None:
    """A sheet name from a compare_table index like ``RI0`` / ``ENSheet1`` (R=result,
    E=expected; I=index, N=name)."""
    names = list(sheets)
    text = str(spec)
    if len(text) >= 2 and text[0] in "RE" and text[1] in "IN":
        text = text[1:]
    if text.startswith("I"):
        try:
            i = int(text[1:])
        except ValueError:
            return None
        return names[i] if 0 <= i < len(names) else None
    if text.startswith("N"):
        return text[1:] if text[1:] in sheets else None
    return None


def _compare_sheet(rs: dict, es: dict, label: str, limit: int) -> list[str]:
    keys = sorted(set(rs) | set(es))
    diffs = [k for k in keys if rs.get(k) != es.get(k)]
    if not diffs:
        return [f"{label}: all cells equal"]
    lines = [f"{label}: {len(diffs)} cell(s) differ"]
    for r, c in diffs[:limit]:
        lines.append(
            f"  {_col(c)}{r}: result {_show(rs.get((r, c)))}, expected {_show(es.get((r, c)))}"
        )
    if len(diffs) > limit:
        lines.append(f"  … and {len(diffs) - limit} more")
    return lines


def explain_table(
    result: Path, expected: Path, rules: Sequence[dict[str, Any]] = (), limit: int = LIMIT
) -> list[str]:
    """Differences between two spreadsheets (see the module docstring)."""
    rsheets, esheets = read_sheets(result), read_sheets(expected)
    lines: list[str] = []
    if (len(rsheets) != len(esheets)) if rules else (list(rsheets) != list(esheets)):
        lines.append(f"sheets: result {list(rsheets)}, expected {list(esheets)}")
    for i, rule in enumerate(rules or ()):
        if "sheet_idx0" in rule and "sheet_idx1" in rule:
            a, b = rule["sheet_idx0"], rule["sheet_idx1"]
            left = rsheets if str(a).startswith("R") else esheets
            right = rsheets if str(b).startswith("R") else esheets
            label = f"rule {i + 1} ({rule.get('type')}) {a} vs {b}"
            na, nb = _pick(left, a, "a"), _pick(right, b, "b")
            if na is None or nb is None:
                lines.append(f"{label}: sheet {a if na is None else b} does not exist")
                continue
            lines += _compare_sheet(left[na], right[nb], f"{label}: sheet '{na}' vs '{nb}'", limit)
        else:
            lines.append(
                f"rule {i + 1} ({rule.get('type')}): not explained here (compares "
                "more than cell values)"
            )
    if not rules:
        for rname, ename in zip(rsheets, esheets):
            lines += _compare_sheet(
                rsheets[rname], esheets[ename], f"sheet '{rname}' vs expected '{ename}'", limit
            )
    return lines


def explain_docx(result: Path, expected: Path, limit: int = LIMIT) -> list[str]:
    """Paragraphs (and table cells) that differ between two docx files."""
    import docx

    rd, ed = docx.Document(str(result)), docx.Document(str(expected))
    rp = [p.text for p in rd.paragraphs]
    ep = [p.text for p in ed.paragraphs]
    lines: list[str] = []
    if len(rp) != len(ep):
        lines.append(f"paragraphs: result has {len(rp)}, expected {len(ep)}")
    diffs = [
        i
        for i in range(max(len(rp), len(ep)))
        if (rp[i] if i < len(rp) else None) != (ep[i] if i < len(ep) else None)
    ]
    if diffs:
        lines.append(f"{len(diffs)} paragraph(s) differ")
        for i in diffs[:limit]:
            r = rp[i] if i < len(rp) else None
            e = ep[i] if i < len(ep) else None
            lines.append(f"  paragraph {i + 1}: result {_show(r)}, expected {_show(e)}")
        if len(diffs) > limit:
            lines.append(f"  … and {len(diffs) - limit} more")
    for t, (rt, et) in enumerate(zip(rd.tables, ed.tables)):
        rc = {(i, j): c.text for i, row in enumerate(rt.rows) for j, c in enumerate(row.cells)}
        ec = {(i, j): c.text for i, row in enumerate(et.rows) for j, c in enumerate(row.cells)}
        bad = sorted(k for k in set(rc) | set(ec) if rc.get(k) != ec.get(k))
        for i, j in bad[:limit]:
            lines.append(
                f"  table {t + 1} row {i + 1} cell {j + 1}: result "
                f"{_show(rc.get((i, j)))}, expected {_show(ec.get((i, j)))}"
            )
    if len(rd.tables) != len(ed.tables):
        lines.append(f"tables: result has {len(rd.tables)}, expected {len(ed.tables)}")
    return lines or [
        "paragraph texts and table cells are equal (the difference is elsewhere: "
        "formatting, styles or properties)"
    ]


def explain_text(result: Path, expected: Path, limit: int = LIMIT) -> list[str]:
    """The lines that differ between two text files (unified diff, expected -> result)."""
    r = result.read_text(encoding="utf-8", errors="replace").splitlines()
    e = expected.read_text(encoding="utf-8", errors="replace").splitlines()
    if r == e:
        return (
            ["the lines are equal (the difference is in whitespace at the end or the encoding)"]
            if result.read_bytes() != expected.read_bytes()
            else ["the files are identical"]
        )
    diff = [
        d
        for d in difflib.unified_diff(e, r, "expected", "result", lineterm="", n=0)
        if not d.startswith(("---", "+++"))
    ]
    shown = diff[: limit * 2]
    more = [f"… and {len(diff) - len(shown)} more diff lines"] if len(diff) > len(shown) else []
    return [
        f"{sum(d.startswith(('-', '+')) for d in diff)} line(s) differ (- expected, + result)",
        *("  " + d for d in shown),
        *more,
    ]


def explain_csv(result: Path, expected: Path, limit: int = LIMIT) -> list[str]:
    """Cells that differ between two CSV files."""

    def rows(p: Path) -> dict[tuple[int, int], Any]:
        text = p.read_text(encoding="utf-8", errors="replace")
        return {
            (i + 1, j + 1): v
            for i, row in enumerate(csv.reader(io.StringIO(text)))
            for j, v in enumerate(row)
            if v != ""
        }

    return _compare_sheet(rows(result), rows(expected), "csv", limit)


def explain_files(
    result: Path | str,
    expected: Path | str,
    *,
    func: str = "",
    options: dict[str, Any] | None = None,
    limit: int = LIMIT,
) -> list[str]:
    """Where ``result`` differs from ``expected`` (lines of text); never raises for a bad
    file, it says why it could not compare instead."""
    r, e = Path(result), Path(expected)
    suffix = (r.suffix or e.suffix).lower()
    try:
        if suffix in _SHEETS:
            return explain_table(r, e, (options or {}).get("rules") or (), limit)
        if suffix == ".docx":
            return explain_docx(r, e, limit)
        if suffix == ".csv":
            return explain_csv(r, e, limit)
        if suffix in _TEXT or not suffix:
            return explain_text(r, e, limit)
    except Exception as exc:  # noqa: BLE001 - an explanation must never break scoring
        return [f"could not compare {r.name} with {e.name}: {type(exc).__name__}: {exc}"]
    same = r.read_bytes() == e.read_bytes()
    return [
        f"{r.name} and {e.name} are {'identical' if same else 'different'} "
        f"({r.stat().st_size} vs {e.stat().st_size} bytes; no cell-level comparison for "
        f"{suffix} files)"
    ]
