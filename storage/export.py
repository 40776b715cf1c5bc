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
from collections.abc import Iterable, Iterator
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
    "metadata",  # the manifest's columns (an object; a JSON string in csv)
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
            record = export_record(row)
            record["metadata"] = json.dumps(record["metadata"], ensure_ascii=False)
            writer.writerow(record)
            count += 1
    return count


def write_txt_tree(rows: Iterable[ExportRow], out_dir: Path, *, local_root: str | None) -> int:
    """One .txt transcript per source with text, mirroring the sources under `out_dir`.

    Local paths are made relative to `local_root`: give the common folder of every item
    in the store (common_local_root over all sources, whatever the status exported), so
    the layout does not change with the rows chosen. Bucket objects go under bucket/key.
    A name already written (a.wav and a.mp3, one source in two languages, different
    case) gets the language and then a number added until it is free, so no transcript
    overwrites another. Returns the number of files written.
    """
    out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    used: set[str] = set()
    count = 0
    for row in rows:
        if row.text is None:
            continue
        relative = transcript_path(row.source, local_root=local_root)
        target = _free_name(relative, row.language, used)
        _write_private_text(out_dir.joinpath(*target.parts), row.text + "\n")
        count += 1
    return count


def _free_name(relative: PurePosixPath, language: str, used: set[str]) -> PurePosixPath:
    """The first of name.txt, name.ext.LANG.txt, name.ext.LANG.2.txt... not yet used."""
    tag = _safe_part(language.replace("/", "_"))
    candidate = relative.with_name(f"{relative.stem}.txt")
    number = 1
    while candidate.as_posix().casefold() in used:  # case-insensitive disks too
        number += 1
        suffix = f"{tag}.txt" if number == 2 else f"{tag}.{number - 1}.txt"
        candidate = relative.with_name(f"{relative.name}.{suffix}")
    used.add(candidate.as_posix().casefold())
    return candidate


def common_local_root(sources: Iterable[str]) -> str | None:
    """The deepest folder holding every local source (None when there is none); streamed."""
    root: str | None = None
    for source in sources:
        if "://" in source:
            continue
        folder = os.path.dirname(source)
        if root is None:
            root = folder
        elif folder != root and not folder.startswith(root.rstrip("/") + "/"):
            root = os.path.commonpath([root, folder])
    return root


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


def write_private_bytes(out_path: Path, data: bytes) -> None:
    """Write `data` to a 0600 file beside `out_path` and rename it into place."""
    with _private_replace(out_path) as handle:
        handle.write(data.decode("utf-8"))


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
