"""Formats the bundled ffmpeg cannot decode, known by their first bytes, and what to do.

A file ffmpeg cannot open is `unsupported_format`: this module names the format when its
magic bytes say what it is (a DS2 dictation, an archive), else the file's extension,
and says what a person can do about it. Deciding by the first bytes costs no process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

# (offset, magic, the format's name, what to do)
_KNOWN: Final = (
    (
        0,
        b"\x03ds2",
        "DS2 (DSS Pro dictation)",
        "convert it to WAV or MP3 with the recorder vendor's software (Olympus ODMS or "
        "Philips SpeechExec) and put the copy in the source",
    ),
    (0, b"PK\x03\x04", "a ZIP archive", "unpack it into the source folder"),
    (0, b"\x1f\x8b", "a gzip archive", "unpack it into the source folder"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "unpack it into the source folder"),
    (0, b"Rar!", "a RAR archive", "unpack it into the source folder"),
)
_CONVERT: Final = "convert it to WAV, MP3 or FLAC (e.g. with the recorder's own software)"


def unsupported_format_sentence(head: bytes, *, path: Path) -> str:
    """'unsupported format: PATH is FORMAT: WHAT TO DO' for a file ffmpeg cannot open."""
    for offset, magic, name, advice in _KNOWN:
        if head[offset : offset + len(magic)] == magic:
            return f"unsupported format: {path} is {name}, which ffmpeg cannot decode: {advice}"
    extension = path.suffix.lower() or "no extension"
    return (
        f"unsupported format: {path} ({extension}) is in an unrecognized format that "
        f"ffmpeg cannot decode: {_CONVERT}"
    )
