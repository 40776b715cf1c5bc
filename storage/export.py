"""Writing exported items: jsonl, csv (same columns), or a tree of .txt transcripts.

Exports hold transcripts (patient data): every file is written the way
storage/export_files.py says (0600 files in 0700 folders, never through a link, staged
and then put in place, someone else's file replaced only with `force`). CSV cells a
spreadsheet would run as a formula are neutralised (OWASP's CSV injection guidance);
jsonl and txt hold the text exactly.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from storage.errors import ExportRefused
from storage.export_files import (
    PATH_MAX_BYTES,
    ExportFolder,
    fit_part,
    fit_path,
    private_replace,
)
from storage.records import ExportRow

# OWASP: a cell starting with = + - @ TAB or CR is a formula to a spreadsheet; OWASP's
# ASVS (1.2.10) adds NUL. Blanks and quotes before one do not make it safe.
_FORMULA_START = frozenset("=+-@\t\r\0")
_LEADING_BLANKS_AND_QUOTES = re.compile(r"[\s'\"]*")


@dataclass(frozen=True)
class Refusal:
    """A transcript not written: its source, where it would have gone, and why."""

    source: str
    target: PurePosixPath
    reason: str


@dataclass
class TreeResult:
    """What `write_txt_tree` did: files written, and the refused ones with their reason."""

    written: int = 0
    refused: list[Refusal] = field(default_factory=list)


EXPORT_COLUMNS = (
    "source",  # the recording's path relative to its source (what a person reads)
    "source_uri",  # the full URI (what a machine opens)
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
    "flags",
    "metadata",  # the manifest's columns (an object; a JSON string in csv)
    "machine_text",  # what the service answered; `text` is the current version
    "reviewed_by",
    "reviewed_at",
    "revision",
)


def export_record(row: ExportRow) -> dict[str, Any]:
    """One row as a JSON-ready dict: EXPORT_COLUMNS, `updated_at` in ISO 8601, `flags` a list."""
    record = {name: getattr(row, name) for name in EXPORT_COLUMNS if name != "source_uri"}
    record["source_uri"] = row.source_uri or row.source
    record = {name: record[name] for name in EXPORT_COLUMNS}
    record["updated_at"] = row.updated_at.isoformat()
    record["flags"] = list(row.flags)
    return record


def neutralise_cell(text: str) -> str:
    """`text` with a single quote first when a spreadsheet would read it as a formula.

    OWASP's rule: a cell starting with = + - @ TAB or CR (or NUL), also after leading
    blanks or quotes, gets a leading `'`, which spreadsheets show as text. A cell that
    already starts with `'` is text to every spreadsheet and is left as it is.
    """
    if text[:1] == "'":
        return text
    start = _LEADING_BLANKS_AND_QUOTES.match(text)
    first = text[start.end() : start.end() + 1] if start else ""
    if text[:1] in _FORMULA_START or (first and first in _FORMULA_START):
        return "'" + text
    return text


def write_jsonl(rows: Iterable[ExportRow], out_path: Path, *, force: bool = False) -> int:
    """Write one JSON object per line; returns the number of rows.

    Raises ExportRefused (a link or a file medasr did not write at `out_path`, without
    `force`) and OSError.
    """
    count = 0
    with private_replace(out_path, force=force) as handle:
        for row in rows:
            handle.write(json.dumps(export_record(row), ensure_ascii=False) + "\n")
            count += 1
    return count


def write_csv(rows: Iterable[ExportRow], out_path: Path, *, force: bool = False) -> int:
    """Write a header and one CSV row per item (same columns as jsonl); returns the count.

    Every text cell is quoted and neutralised (`neutralise_cell`); numbers stay numbers.
    Raises as write_jsonl.
    """
    count = 0
    with private_replace(out_path, force=force) as handle:
        # Quoted text cells: a separator or quote inside one cannot start a new cell.
        writer = csv.DictWriter(handle, fieldnames=EXPORT_COLUMNS, quoting=csv.QUOTE_NONNUMERIC)
        writer.writeheader()
        for row in rows:
            record = export_record(row)
            record["metadata"] = json.dumps(record["metadata"], ensure_ascii=False)
            # A cell holds one string: the flags joined with ";" ("" when none).
            record["flags"] = ";".join(row.flags)
            writer.writerow(
                {k: neutralise_cell(v) if isinstance(v, str) else v for k, v in record.items()}
            )
            count += 1
    return count


def write_txt_tree(
    rows: Iterable[ExportRow],
    out_dir: Path,
    *,
    local_root: str | None,
    force: bool = False,
    keys: Iterable[tuple[str, str]] | None = None,
) -> TreeResult:
    """One .txt transcript per source with text, mirroring the sources under `out_dir`.

    Local paths are made relative to `local_root`: give the common folder of every item
    in the store (common_local_root over all sources, whatever the status exported), so
    the layout does not change with the rows chosen. Bucket objects go under bucket/key.
    A name already taken (a.wav and a.mp3, one source in two languages, different case)
    goes to the item met first in `keys` (every item's (source, language), oldest first:
    the store's order, so a recording added later never takes an earlier one's name on a
    re-export); the others get their extension and language added, then a number. Without
    `keys`, the rows' own order decides. A name too long for the disk is shortened with a
    hash. A file that cannot be written (a link in the way, a full disk) is refused and
    the rest go on. Raises OSError only when `out_dir` itself cannot be made or opened.
    """
    folder = ExportFolder(out_dir, force=force)
    room = PATH_MAX_BYTES - len(os.fsencode(os.path.abspath(out_dir))) - 1
    used: set[str] = set()
    names = _names_in_order(keys or (), used, local_root=local_root, room_bytes=room)
    result = TreeResult()
    try:
        for row in rows:
            if row.text is None:
                continue
            target = _name_of(row, names, used, local_root=local_root, room_bytes=room)
            reason = _write_transcript(folder, target, row.text)
            if reason is None:
                result.written += 1
            else:
                result.refused.append(Refusal(source=row.source, target=target, reason=reason))
    finally:
        folder.close()
    return result


def _name_of(
    row: ExportRow,
    names: Mapping[tuple[str, str], PurePosixPath],
    used: set[str],
    *,
    local_root: str | None,
    room_bytes: int,
) -> PurePosixPath:
    """The row's file name: the one its key was given, else the first one free."""
    target = names.get((row.source, row.language))
    if target is None:
        relative = transcript_path(row.source, local_root=local_root)
        target = _free_name(relative, row.language, used, room_bytes=room_bytes)
    return target


def _names_in_order(
    keys: Iterable[tuple[str, str]], used: set[str], *, local_root: str | None, room_bytes: int
) -> dict[tuple[str, str], PurePosixPath]:
    """Each (source, language)'s file name, given in `keys`' order (adds them to `used`)."""
    names: dict[tuple[str, str], PurePosixPath] = {}
    for source, language in keys:
        if (source, language) not in names:
            relative = transcript_path(source, local_root=local_root)
            names[source, language] = _free_name(relative, language, used, room_bytes=room_bytes)
    return names


def _write_transcript(folder: ExportFolder, target: PurePosixPath, text: str) -> str | None:
    """Write one transcript; None when written, else why not (one sentence)."""
    try:
        folder.write_bytes(target, (text + "\n").encode("utf-8"))
    except ExportRefused as exc:
        return exc.message
    except UnicodeError:
        return "the transcript is not valid text (UTF-8)"
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _free_name(
    relative: PurePosixPath, language: str, used: set[str], *, room_bytes: int
) -> PurePosixPath:
    """The first of name.txt, name.ext.LANG.txt, name.ext.LANG.2.txt... not yet used,
    each fitted into `room_bytes` (and 255 bytes a part) before it is compared."""
    tag = _safe_part(language.replace("/", "_"))
    candidate = fit_path(relative.with_name(f"{relative.stem}.txt"), room_bytes=room_bytes)
    number = 1
    while candidate.as_posix().casefold() in used:  # case-insensitive disks too
        number += 1
        suffix = f"{tag}.txt" if number == 2 else f"{tag}.{number - 1}.txt"
        candidate = fit_path(relative.with_name(f"{relative.name}.{suffix}"), room_bytes=room_bytes)
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
    parts = [
        fit_part(_safe_part(p))
        for p in relative.replace(os.sep, "/").split("/")
        if p not in ("", ".")
    ]
    return PurePosixPath(*parts) if parts else PurePosixPath("unnamed")


def _safe_part(part: str) -> str:
    return "_" if part == ".." else part


def write_private_bytes(out_path: Path, data: bytes, *, force: bool = False) -> None:
    """Write `data` to a 0600 file staged beside `out_path`, then put in place.

    Raises ExportRefused and OSError, as write_jsonl.
    """
    with private_replace(out_path, force=force) as handle:
        handle.write(data.decode("utf-8"))
