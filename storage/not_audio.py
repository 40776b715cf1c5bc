"""Which files under a source are not recordings: the stated rule, decided by name alone.

Everything else under a source is a recording to transcribe, whatever its extension:
the decoder gives the verdict (transcribed, skipped as silent, or failed with a reason
such as `unsupported_format`). Files this rule names are ignored, counted and reported
as "not audio", never sent. The rule costs no syscall and no read, so a listing of 10^6
files stays a listing.
"""

from __future__ import annotations

from typing import Final

# Documents, data, images, scripts, checksums and databases that sit beside dictations: the
# metadata manifest (medasr.csv), sidecar notes, scanned forms, the recorder's exports.
NOT_AUDIO_EXTENSIONS: Final = frozenset(
    {
        # text and documents
        ".txt", ".md", ".rtf", ".doc", ".docx", ".odt", ".pdf", ".html", ".htm", ".log",
        # data and configuration
        ".csv", ".tsv", ".json", ".xml", ".yaml", ".yml", ".ini", ".cfg", ".xls", ".xlsx",
        ".ods",
        # images
        ".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".heic", ".svg",
        ".ico",
        # scripts (a folder of samples with the script that made them)
        ".py", ".sh", ".bat", ".cmd", ".ps1",
        # checksums, signatures, databases
        ".md5", ".sha1", ".sha256", ".sig", ".asc", ".db", ".sqlite", ".sqlite3",
        ".db-wal", ".db-shm", ".db-journal",
    }
)  # fmt: skip
# Copies still on their way in: a download or an editor's temporary file.
TEMPORARY_EXTENSIONS: Final = frozenset({".part", ".partial", ".crdownload", ".tmp", ".swp"})
# Files operating systems leave in folders.
NOT_AUDIO_NAMES: Final = frozenset({".ds_store", "thumbs.db", "desktop.ini"})


def not_audio_reason(name: str) -> str | None:
    """Why the file called `name` is not a recording (a short phrase), or None if it may be."""
    lowered = name.lower()
    if lowered in NOT_AUDIO_NAMES:
        return "a file the operating system keeps"
    if lowered.startswith("._"):
        return "a macOS resource fork (._ file)"
    dot = lowered.rfind(".")
    extension = lowered[dot:] if dot > 0 else ""
    if extension in NOT_AUDIO_EXTENSIONS:
        return f"{extension} file"
    if extension in TEMPORARY_EXTENSIONS:
        return f"a temporary or partial copy ({extension})"
    return None
