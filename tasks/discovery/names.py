"""How a recording is named for a person: its path relative to the source, on one line."""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Sequence

_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def recording_name(uri: str, *, roots: Sequence[str] = ()) -> str:
    """`uri` relative to the deepest of the source `roots` (normalized) holding it, escaped.

    A single-file source gives its file name; a URI under no root (or no roots) gives
    the whole URI.
    """
    root = root_of(uri, roots=roots)
    if root is None:
        return one_line(uri)
    if uri == root.rstrip("/"):
        return one_line(posixpath.basename(uri) or uri)
    return one_line(uri[len(root.rstrip("/")) + 1 :])


def root_of(uri: str, *, roots: Sequence[str]) -> str | None:
    """The deepest root that is `uri` itself or a folder above it (not a name prefix)."""
    holding = [
        root for root in roots if uri == root.rstrip("/") or uri.startswith(root.rstrip("/") + "/")
    ]
    return max(holding, key=len, default=None)


def reason_about(message: str | None, *, uri: str, roots: Sequence[str] = ()) -> str:
    """`message` (an error's) on one line, the recording's URI in it shortened to its name."""
    if message and roots:
        message = message.replace(uri, recording_name(uri, roots=roots))
    return one_line(message)


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
