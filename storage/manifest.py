"""The metadata manifest: an optional CSV naming, per recording, who and what it is about.

One header row with a `path` column (relative to the source) and any others
(`patient_id`, `doc_type`, `author`, `encounter`, `date`, ...). Read with the standard
csv module (UTF-8, an Excel byte-order mark tolerated). Every problem is a
ManifestInvalid naming the file and the line, never a traceback.
"""

from __future__ import annotations

import csv
import io
import os
import posixpath
from pathlib import Path

from storage.errors import ManifestInvalid

MANIFEST_NAME = "medasr.csv"
PATH_COLUMN = "path"
_MAX_BYTES = 64 << 20  # a manifest is an index, not data: refuse to load a huge file whole


def default_manifest(source_root: str) -> Path | None:
    """`medasr.csv` at the root of a local folder source, if there is one."""
    if "://" in source_root or not os.path.isdir(source_root):
        return None
    candidate = Path(source_root) / MANIFEST_NAME
    return candidate if candidate.is_file() else None


def read_manifest(path: Path) -> dict[str, dict[str, str]]:
    """Columns by normalized relative path (blank cells left out); raises ManifestInvalid."""
    text = _read_text(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [name.strip() for name in reader.fieldnames or ()]
    except csv.Error as exc:
        raise ManifestInvalid(f"manifest {path}: the header is not valid CSV ({exc})") from None
    _check_header(path, header)
    reader.fieldnames = header
    rows: dict[str, dict[str, str]] = {}
    try:
        for row in reader:
            line = reader.line_num
            if None in row:  # more cells than header columns
                raise ManifestInvalid(f"manifest {path}, line {line}: more cells than columns")
            relative = _relative_path(path, line, row.get(PATH_COLUMN) or "")
            if relative in rows:
                raise ManifestInvalid(f"manifest {path}, line {line}: {relative!r} is listed twice")
            rows[relative] = {
                name: value.strip()
                for name, value in row.items()
                if name != PATH_COLUMN and name and value is not None and value.strip()
            }
    except csv.Error as exc:
        raise ManifestInvalid(
            f"manifest {path}, line {reader.line_num}: not valid CSV ({exc})"
        ) from None
    return rows


def metadata_by_uri(
    manifest: dict[str, dict[str, str]], *, source_root: str
) -> dict[str, dict[str, str]]:
    """The manifest keyed by the source URIs the listing gives (absolute path or URL)."""
    if "://" in source_root:
        base = source_root.rstrip("/")
        return {f"{base}/{relative}": columns for relative, columns in manifest.items()}
    base = source_root if os.path.isdir(source_root) else os.path.dirname(source_root)
    return {
        os.path.normpath(os.path.join(base, *relative.split("/"))): columns
        for relative, columns in manifest.items()
    }


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > _MAX_BYTES:
            raise ManifestInvalid(
                f"manifest {path} is {size} bytes; a manifest over {_MAX_BYTES} bytes is refused"
            )
        return path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ManifestInvalid(f"manifest not found: {path}") from None
    except IsADirectoryError:
        raise ManifestInvalid(f"manifest {path} is a folder, not a CSV file") from None
    except OSError as exc:
        raise ManifestInvalid(f"cannot read manifest {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ManifestInvalid(
            f"manifest {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 CSV"
        ) from None


def _check_header(path: Path, header: list[str]) -> None:
    if not header:
        raise ManifestInvalid(f"manifest {path} is empty; it needs a header row with 'path'")
    if PATH_COLUMN not in header:
        shown = ", ".join(repr(h) for h in header[:8])
        raise ManifestInvalid(
            f"manifest {path} has no 'path' column (its header is {shown}); "
            "name the column of recording paths 'path'"
        )
    duplicates = sorted({h for h in header if h and header.count(h) > 1})
    if duplicates:
        raise ManifestInvalid(f"manifest {path}: column {duplicates[0]!r} appears twice")


def _relative_path(path: Path, line: int, raw: str) -> str:
    """A clean relative POSIX path inside the source; raises ManifestInvalid otherwise."""
    value = raw.strip().replace("\\", "/")
    if not value:
        raise ManifestInvalid(f"manifest {path}, line {line}: the 'path' cell is empty")
    normalized = posixpath.normpath(value)
    if value.startswith("/") or normalized == ".." or normalized.startswith("../"):
        raise ManifestInvalid(
            f"manifest {path}, line {line}: {value!r} is not a path inside the source; "
            "give paths relative to the source folder"
        )
    return normalized
