"""Spreadsheet metrics: ``compare_table`` (a subset of OSWorld's rules: ``sheet_name``,
``sheet_data``, ``check_cell``; xlsx/ods/csv) and ``compare_csv``."""

from __future__ import annotations

import logging
import operator
import re
from pathlib import Path
from typing import Any

from computer_env.osworld.errors import EvaluatorUnsupported

logger = logging.getLogger(__name__)

Book = dict[str, Any]  # sheet name -> pandas DataFrame


def _load_book(path: str) -> Book:
    import pandas as pd

    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return {Path(path).stem: pd.read_csv(path)}
    engine = "odf" if suffix in (".ods", ".odt") else None
    return pd.read_excel(path, sheet_name=None, engine=engine)


def _sheet(idx: Any, result: Book, expected: Book | None) -> Any:
    """OSWorld's sheet index: int (result by position), ``RI<n>``/``RN<name>`` (result),
    ``EI<n>``/``EN<name>`` (expected)."""
    if isinstance(idx, int):
        book, key = result, list(result)[idx] if idx < len(result) else None
    else:
        book = result if idx.startswith("R") else expected
        if book is None:
            raise ValueError(f"sheet index {idx!r} needs an expected file")
        key = list(book)[int(idx[2:])] if idx[1] == "I" else idx[2:]
    if key is None or key not in book:
        return None
    return book[key]


def _match_value(value: Any, rule: dict[str, Any]) -> bool:
    method, ref = rule["method"], rule.get("ref")
    if method.startswith("re"):
        flags = re.IGNORECASE if method.endswith(".I") else 0
        return re.search(ref, str(value), flags) is not None
    if method.startswith("approx:"):
        try:
            return abs(float(value) - float(ref)) <= float(method.split(":", 1)[1])
        except (TypeError, ValueError):
            return False
    ops = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
           "gt": operator.gt, "ge": operator.ge}
    if method in ops:
        try:
            return bool(ops[method](value, ref))
        except TypeError:
            return False
    raise EvaluatorUnsupported(f"compare_table method {method!r}", "not in the built-in subset")


def _check_cell(result_path: str, rule: dict[str, Any]) -> bool:
    import openpyxl

    if not result_path.endswith(".xlsx"):
        raise EvaluatorUnsupported("compare_table check_cell", "only .xlsx in the built-in subset")
    book = openpyxl.load_workbook(result_path, data_only=True)
    idx = rule.get("sheet_idx", 0)
    names = book.sheetnames
    name = names[idx] if isinstance(idx, int) else (names[int(idx[2:])] if idx[1] == "I" else idx[2:])
    cell = book[name][rule["coordinate"]]
    for prop, prop_rule in rule.get("props", {}).items():
        if prop != "value":
            raise EvaluatorUnsupported(f"compare_table check_cell prop {prop!r}",
                                       "not in the built-in subset")
        if not _match_value(cell.value, prop_rule):
            return False
    return True


def compare_table(result: str | None, expected: str | None = None, **options: Any) -> float:
    """1 when every rule in ``options["rules"]`` holds for the result (and expected) workbook."""
    if result is None or not Path(result).exists():
        return 0.0
    try:
        rbook = _load_book(result)
    except Exception as exc:  # noqa: BLE001 - an unreadable result scores 0, as upstream
        logger.info("compare_table: cannot load %s: %s", result, exc)
        return 0.0
    ebook = _load_book(expected) if expected is not None else None
    for rule in options.get("rules", []):
        kind = rule["type"]
        if kind == "sheet_name":
            ok = ebook is not None and list(rbook) == list(ebook)
        elif kind == "sheet_data":
            a = _sheet(rule["sheet_idx0"], rbook, ebook)
            b = _sheet(rule["sheet_idx1"], rbook, ebook)
            ok = a is not None and b is not None and a.equals(b)
        elif kind == "check_cell":
            ok = _check_cell(result, rule)
        else:
            raise EvaluatorUnsupported(f"compare_table rule {kind!r}", "not in the built-in subset")
        logger.debug("compare_table rule %s: %s", kind, ok)
        if not ok:
            return 0.0
    return 1.0


def compare_csv(result: str | None, expected: str | list[str], **options: Any) -> float:
    """1 when the CSV's lines equal one expected file's (``strict``, ``ignore_case``)."""
    if result is None or not Path(result).exists():
        return 0.0

    def lines(path: str) -> list[str]:
        out = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        if not options.get("strict", True):
            out = [line.strip() for line in out]
        if options.get("ignore_case", False):
            out = [line.lower() for line in out]
        return out

    got = lines(result)
    for candidate in [expected] if isinstance(expected, str) else expected:
        if Path(candidate).exists() and lines(candidate) == got:
            return 1.0
    return 0.0
