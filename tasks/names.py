"""How a recording is named for a person: its path relative to the source, on one line."""

from __future__ import annotations

import posixpath
import unicodedata

_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def recording_name(uri: str, *, root: str | None) -> str:
    """`uri` relative to the source `root` (normalized), escaped by one_line.

    A single-file source gives its file name; a URI outside `root`, or no root (a rerun
    over every source), gives the whole URI.
    """
    if root is not None:
        folder = root.rstrip("/") + "/"
        if uri == root.rstrip("/"):
            return one_line(posixpath.basename(uri) or uri)
        if uri.startswith(folder):
            return one_line(uri[len(folder) :])
    return one_line(uri)


def one_line(text: str | None) -> str:
    """`text` as one printable line: tabs, newlines and other control characters as escapes.

    Other controls are C0/C1 (ESC, DEL...) and the line and paragraph separators; None
    gives "". Shown once per file on a run's progress lines, so printable text is
    returned as it is, without a pass over its characters.
    """
    if not text:
        return ""
    if text.isprintable():
        return text
    return "".join(
        _NAMED_ESCAPES.get(ch) or (f"\\u{ord(ch):04x}" if _is_control(ch) else ch) for ch in text
    )


def _is_control(ch: str) -> bool:
    # Cc: C0/C1 controls; Zl/Zp: line and paragraph separators. Other non-printables
    # (a no-break space) are shown as they are.
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp")
