"""The .txt tree: a layout that does not depend on the rows chosen, and no overwrites."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage.export import common_local_root, neutralise_cell, transcript_path, write_txt_tree
from storage.records import ExportRow


def row(source: str, text: str, language: str = "hi") -> ExportRow:
    return ExportRow(
        source=source,
        language=language,
        status="done",
        text=text,
        error_kind=None,
        error_message=None,
        duration_ms=1,
        chunks=1,
        attempts=1,
        sha256=None,
        updated_at=datetime.now(UTC),
    )


def written(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
        for p in out.rglob("*")
        if p.is_file()
    }


def test_common_local_root_ignores_buckets_and_streams() -> None:
    sources = iter(["/data/a/x.wav", "s3://b/k.wav", "/data/a/b/y.wav", "/data/ab/z.wav"])
    assert common_local_root(sources) == "/data"
    assert common_local_root(["/data/a/x.wav", "/data/a/b/y.wav"]) == "/data/a"
    assert common_local_root(["/x.wav", "/data/y.wav"]) == "/"
    assert common_local_root(["s3://b/k.wav"]) is None


def test_the_layout_follows_the_given_root_not_the_rows(tmp_path: Path) -> None:
    rows = [row("/archive/day1/deep/one.wav", "one")]
    write_txt_tree(rows, tmp_path / "out", local_root="/archive")
    assert written(tmp_path / "out") == {"day1/deep/one.txt": "one\n"}


def test_renamed_transcripts_never_overwrite_one_another(tmp_path: Path) -> None:
    rows = [
        row("/archive/bucket/key/d.wav", "local en", language="en-IN"),
        row("/archive/bucket/key/d.wav", "local hi"),
        row("/archive/x.wav", "x"),
        row("s3://bucket/key/d.wav", "bucket hi"),  # d.txt and d.wav.hi.txt are taken
        row("s3://bucket/key/D.wav", "upper"),  # d.txt on a case-insensitive disk
    ]
    count = write_txt_tree(rows, tmp_path / "out", local_root="/archive").written
    assert count == 5
    assert written(tmp_path / "out") == {
        "bucket/key/d.txt": "local en\n",
        "bucket/key/d.wav.hi.txt": "local hi\n",
        "x.txt": "x\n",
        "bucket/key/d.wav.hi.2.txt": "bucket hi\n",
        "bucket/key/D.wav.hi.3.txt": "upper\n",
    }


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("=1+1", "'=1+1"),
        ("+91 98765", "'+91 98765"),
        ("-1-1 (dose)", "'-1-1 (dose)"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("\0x", "'\0x"),
        ("  =1", "'  =1"),  # after leading blanks...
        ('"=1', "'\"=1"),  # ...or quotes, a spreadsheet may still see a formula
        (" '\n+1", "' '\n+1"),
        ("a = b", "a = b"),
        ("", ""),
        ("'=already", "'=already"),  # a quote first: text to every spreadsheet
    ],
)
def test_csv_cells_are_neutralised_as_owasp_says(cell: str, shown: str) -> None:
    assert neutralise_cell(cell) == shown


def test_an_unwritable_transcript_leaves_no_file_and_the_rest_is_written(tmp_path: Path) -> None:
    rows = [row("/archive/bad.wav", "half \ud800 broken"), row("/archive/good.wav", "good")]
    result = write_txt_tree(rows, tmp_path / "out", local_root="/archive")
    assert written(tmp_path / "out") == {"good.txt": "good\n"}  # no partial file, no temp
    assert result.written == 1
    assert [(r.source, r.target.as_posix()) for r in result.refused] == [
        ("/archive/bad.wav", "bad.txt")
    ]


def test_long_name_components_get_a_stable_suffix() -> None:
    long = "é" * 200  # 400 bytes
    first = transcript_path(f"/a/{long}/{long}x.wav", local_root="/a")
    second = transcript_path(f"/a/{long}/{long}y.wav", local_root="/a")
    assert first != second
    assert all(len(part.encode()) <= 255 for part in first.parts + second.parts)
    assert first.parts[0] == second.parts[0]  # same folder, shortened the same way
    assert first == transcript_path(f"/a/{long}/{long}x.wav", local_root="/a")


def test_a_path_too_long_for_the_disk_is_folded_and_nothing_is_lost(tmp_path: Path) -> None:
    folders = "/".join(f"{i:03d}" + "f" * 200 for i in range(25))  # 5 KB of folders
    rows = [row(f"/archive/{folders}/one.wav", "one"), row(f"/archive/{folders}/two.wav", "two")]
    rows.append(row(f"/archive/{folders}/one.wav", "one in hindi"))
    result = write_txt_tree(rows, tmp_path / "out", local_root="/archive")
    assert (result.written, result.refused) == (3, [])
    files = written(tmp_path / "out")
    assert sorted(files.values()) == sorted(["one\n", "one in hindi\n", "two\n"])
    assert all(len(str(tmp_path / "out" / name).encode()) <= 4095 for name in files)
