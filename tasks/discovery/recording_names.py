"""How a recording is named for a person: its path relative to the source, on one line."""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Sequence

_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Bidirectional marks, embeddings, overrides and isolates: they reorder what a terminal
# shows ("report<RLO>gpj.exe" reads "reportexe.jpg").
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)


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
    """`text` as one printable line, safe for a terminal and a log line; None gives "".

    The one escaper of every command that names a recording (run, status, export,
    review, deliver). Escaped: TAB, LF and CR as `\\t`, `\\n`, `\\r`; every other C0
    control (NUL..US, so ESC and BEL), DEL and the C1 controls (U+0080..U+009F), and the
    line and paragraph separators (U+2028, U+2029) and the bidirectional controls
    (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069) as `\\uXXXX`. So a name
    cannot move the cursor, retitle the window, ring the bell, start a forged log line
    or show its characters in another order. Other text
    (a no-break space, any script) is kept as it is. Shown once per file on a run's
    progress lines, so printable text is returned without a pass over its characters.
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
    return ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Zl", "Zp")
