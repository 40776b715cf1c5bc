"""Writing exported items: jsonl, csv (same columns), or a tree of .txt transcripts.

Exports hold transcripts (patient data): files are created with mode 0600 and folders
with 0700, and a file export is written beside its target and renamed into place, so a
crash never leaves half a file under the final name.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

from storage.records import ExportRow

EXPORT_COLUMNS = (
    "source",
    "language",
    "status",
    "text",
    "error_kind",
    "error_message",
    "duration_ms",
    "chunks",
    "attempts",
    "sha256",
    "updated_at",
)


def export_record(row: ExportRow) -> dict[str, Any]:
    """One row as a JSON-ready dict: EXPORT_COLUMNS, `updated_at` in ISO 8601."""
    record = {name: getattr(row, name) for name in EXPORT_COLUMNS}
    record["updated_at"] = row.updated_at.isoformat()
    return record


def write_jsonl(rows: Iterable[ExportRow], out_path: Path) -> int:
    """Write one JSON object per line; returns the number of rows."""
    count = 0
    with _private_replace(out_path) as handle:
        for row in rows:
            handle.write(json.dumps(export_record(row), ensure_ascii=False) + "\n")
            count += 1
    return count


def write_csv(rows: Iterable[ExportRow], out_path: Path) -> int:
    """Write a header and one CSV row per item (same columns as jsonl); returns the count."""
    count = 0
    with _private_replace(out_path) as handle:
        writer = csv.DictWriter(handle, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(export_record(row))
            count += 1
    return count


def write_txt_tree(rows: Callable[[], Iterable[ExportRow]], out_dir: Path) -> int:
    """One .txt transcript per source with text, mirroring the sources under `out_dir`.

    `rows` is called twice (once for the common root, once to write), so nothing is
    held in memory. Local paths are made relative to their common folder; bucket
    objects go under bucket/key. Returns the number of files written.
    """
    root = common_local_root(row.source for row in rows() if row.text is not None)
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    used: set[PurePosixPath] = set()
    count = 0
    for row in rows():
        if row.text is None:
            continue
        relative = transcript_path(row.source, local_root=root)
        target = relative.with_suffix(".txt")
        if target in used:  # a.wav and a.mp3, or one source in two languages
            target = relative.with_name(f"{relative.name}.{row.language}.txt")
        used.add(target)
        _write_private_text(out_dir.joinpath(*target.parts), row.text + "\n")
        count += 1
    return count


def common_local_root(sources: Iterable[str]) -> str | None:
    """The deepest folder holding every local source (None when there is none)."""
    folders = {os.path.dirname(s) for s in sources if "://" not in s}
    return os.path.commonpath(folders) if folders else None


def transcript_path(source: str, *, local_root: str | None) -> PurePosixPath:
    """Where a source's transcript goes, relative to the export folder (never outside it)."""
    if "://" in source:
        relative = source.split("://", 1)[1]
    else:
        relative = os.path.relpath(source, local_root or os.path.dirname(source))
    parts = [_safe_part(p) for p in relative.replace(os.sep, "/").split("/") if p not in ("", ".")]
    return PurePosixPath(*parts) if parts else PurePosixPath("unnamed")


def _safe_part(part: str) -> str:
    return "_" if part == ".." else part


def _write_private_text(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(descriptor, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


@contextmanager
def _private_replace(out_path: Path) -> Iterator[IO[str]]:
    """A 0600 temp file beside `out_path`, renamed over it only on success."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temp_name = tempfile.mkstemp(prefix=f".{out_path.name}.", dir=out_path.parent)
    try:
        with open(descriptor, "w", encoding="utf-8", newline="") as handle:
            yield handle
        os.replace(temp_name, out_path)
    except BaseException:
        os.unlink(temp_name)
        raise
