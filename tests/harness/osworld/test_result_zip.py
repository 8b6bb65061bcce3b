"""A result file the evaluator reads is checked before it is scored: an office document (a zip)
that does not parse, or whose parts inflate past any task's need (a decompression bomb, which
would keep OSWorld's pure-Python readers busy for tens of minutes: the audit's ``result-bomb``),
is what the agent left (``UnparsableResult``: ``result_unreadable``, a scored 0)."""

from __future__ import annotations

import io
import zipfile

import pytest

from computer_env.osworld.scoring.saves import INFLATED_LIMIT, UnparsableResult, check_zip


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_sound_document_passes() -> None:
    check_zip(
        _zip({"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>"}),
        "/home/user/a.xlsx",
    )
    assert INFLATED_LIMIT == 1 << 30


def test_parts_inflating_past_the_limit_are_refused_before_any_is_inflated() -> None:
    bomb = _zip({"xl/worksheets/sheet1.xml": b"<c>0</c>" * (1 << 18)})  # 2 MiB, a few KB zipped
    assert len(bomb) < 64 * 1024
    with pytest.raises(UnparsableResult, match=r"inflate to 0\.0 GiB .*past the"):
        check_zip(bomb, "/home/user/a.xlsx", limit=1 << 20)
    check_zip(bomb, "/home/user/a.xlsx", limit=4 << 20)  # under its limit: sound


def test_a_member_understating_its_size_fails_its_crc() -> None:
    data = bytearray(_zip({"xl/sheet.xml": b"<c>1</c>" * 4096}))
    directory = data.rfind(b"PK\x01\x02")  # the central directory's entry: uncompressed size
    data[directory + 24 : directory + 28] = (16).to_bytes(4, "little")
    local = data.find(b"PK\x03\x04")
    data[local + 22 : local + 26] = (16).to_bytes(4, "little")
    with pytest.raises(UnparsableResult):
        check_zip(bytes(data), "/home/user/a.xlsx")


def test_not_a_zip_is_unparsable() -> None:
    with pytest.raises(UnparsableResult, match="BadZipFile"):
        check_zip(b"plain text, not a document", "/home/user/a.docx")
