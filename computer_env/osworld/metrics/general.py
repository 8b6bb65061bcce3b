"""General metrics (names, signatures and results as OSWorld's): ``exact_match``,
``match_in_list``, ``is_in_list``, ``check_include_exclude``, ``literal_match``, ``check_list``,
``check_csv``, ``diff_text_file``, ``infeasible``."""

from __future__ import annotations

import csv
import difflib
import re
from typing import Any


def exact_match(result: Any, rules: dict[str, Any]) -> float:
    """1 when ``result == rules["expected"]``."""
    return float(result == rules["expected"])


def match_in_list(result: Any, rules: dict[str, Any]) -> float:
    """1 when ``result`` is one of ``rules["expected"]``."""
    return float(result in rules["expected"])


def is_in_list(result: Any, rules: dict[str, Any]) -> float:
    """1 when ``rules["expected"]`` is in ``result``."""
    return float(result is not None and rules["expected"] in result)


def check_include_exclude(result: str | None, rules: dict[str, list[str]]) -> float:
    """1 when every ``include`` string is in ``result`` and no ``exclude`` string is."""
    if result is None:
        return 0.0
    include, exclude = rules.get("include", []), rules.get("exclude", [])
    return float(all(r in result for r in include) and all(r not in result for r in exclude))


def literal_match(result: Any, expected: Any, **options: Any) -> float:
    """String or list equality, optionally ignoring case (``type``, ``ignore_case``)."""
    kind = options.get("type", "str")
    fold = (lambda s: str(s).lower()) if options.get("ignore_case", False) else str
    if kind == "str":
        return float(fold(result) == fold(expected))
    if kind == "list":
        if not isinstance(result, (list, tuple)) or not isinstance(expected, (list, tuple)):
            return 0.0
        return float([fold(s) for s in result] == [fold(s) for s in expected])
    raise NotImplementedError(f"literal_match type {kind!r}")


def check_list(result: str | None, rules: dict[str, list[str]]) -> float:
    """1 when every ``expect`` regex matches some line of the file and no ``unexpect`` does."""
    if result is None:
        return 0.0
    expect = [re.compile(p) for p in rules.get("expect", [])]
    unexpect = [re.compile(p) for p in rules.get("unexpect", [])]
    found = [False] * len(expect)
    clean = True
    with open(result, encoding="utf-8") as fh:
        for line in fh:
            for i, pattern in enumerate(expect):
                found[i] = found[i] or pattern.search(line) is not None
            clean = clean and all(p.search(line) is None for p in unexpect)
    return float(all(found) and clean)


def _match_record(pattern: dict[str, Any], item: dict[str, Any]) -> bool:
    return all(k in item and item[k] == v for k, v in pattern.items())


def check_csv(result: str | None, rules: dict[str, list[dict[str, str]]]) -> float:
    """1 when each ``expect`` record matches some CSV row and no ``unexpect`` record does."""
    if result is None:
        return 0.0
    expect, unexpect = rules.get("expect", []), rules.get("unexpect", [])
    found = [False] * len(expect)
    clean = True
    with open(result, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            for i, pattern in enumerate(expect):
                found[i] = found[i] or _match_record(pattern, row)
            clean = clean and not any(_match_record(p, row) for p in unexpect)
    return float(all(found) and clean)


def diff_text_file(result: str | None, expect: str) -> float:
    """Similarity ratio of the two files' lines."""
    if result is None:
        return 0.0
    with open(result, encoding="utf-8") as fa, open(expect, encoding="utf-8") as fb:
        return difflib.SequenceMatcher(a=fa.read().splitlines(), b=fb.read().splitlines()).ratio()


def infeasible(*args: Any, **kwargs: Any) -> float:
    """Placeholder: infeasible tasks are scored by the last action, never by this metric."""
    return 0.0
