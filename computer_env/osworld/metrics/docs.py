"""Document metrics: ``compare_text_file`` and ``compare_docx_files`` (OSWorld's options)."""

from __future__ import annotations

import difflib
import re
from typing import Any


def _norm_text(text: str, *, ignore_blanks: bool, ignore_case: bool) -> str:
    if ignore_blanks:
        text = re.sub(r"[\t\n]", " ", text).strip()
        text = re.sub(r"\s+", " ", text)
    return text.lower() if ignore_case else text


def compare_text_file(file1: str | None, file2: str | None, **options: Any) -> float:
    """1 when the two text files are equal (``ignore_blanks``, ``ignore_case``)."""
    if not file1 or not file2:
        return 0.0
    with open(file1, encoding="utf-8", errors="replace") as fa:
        a = fa.read()
    with open(file2, encoding="utf-8", errors="replace") as fb:
        b = fb.read()
    kw = {"ignore_blanks": options.get("ignore_blanks", False),
          "ignore_case": options.get("ignore_case", False)}
    return float(_norm_text(a, **kw) == _norm_text(b, **kw))


def _paragraphs(path: str) -> list[str]:
    if path.endswith(".odt"):
        from odf import teletype, text
        from odf.opendocument import load

        doc = load(path)
        return [teletype.extractText(p) for p in doc.getElementsByType(text.P)]
    from docx import Document

    return [p.text for p in Document(path).paragraphs]


def compare_docx_files(file1: str | None, file2: str | None, **options: Any) -> float:
    """Compare the paragraph text of two .docx/.odt files (``ignore_blanks`` default True,
    ``ignore_case``, ``ignore_order``, ``content_only`` = similarity ratio)."""
    if not file1 or not file2:
        return 0.0
    ignore_blanks = options.get("ignore_blanks", True)
    ignore_case = options.get("ignore_case", False)
    try:
        p1, p2 = _paragraphs(file1), _paragraphs(file2)
    except Exception:  # noqa: BLE001 - an unreadable document scores 0, as upstream
        return 0.0
    if options.get("ignore_order", False):
        p1 = sorted(p.strip() for p in p1 if p.strip())
        p2 = sorted(p.strip() for p in p2 if p.strip())
    if ignore_case:
        p1, p2 = [p.lower() for p in p1], [p.lower() for p in p2]
    if options.get("content_only", False):
        t1 = re.sub(r"\s+", " ", "\n".join(p1)).strip()
        t2 = re.sub(r"\s+", " ", "\n".join(p2)).strip()
        return difflib.SequenceMatcher(a=t1, b=t2).ratio()
    if ignore_blanks:
        t1 = re.sub(r"\s+", " ", "\n".join(p1)).strip()
        t2 = re.sub(r"\s+", " ", "\n".join(p2)).strip()
        return float(t1 == t2)
    return float(len(p1) == len(p2) and all(a == b for a, b in zip(p1, p2)))
