"""What the devserver saw: one entry per request, in memory and optionally as JSON lines."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.errors import ConfigError
from service.contract import TRANSCRIBE_PATH

_NAMED_BY = "--ledger (MEDASR_DEVSERVER_LEDGER)"


@dataclass(frozen=True)
class LedgerEntry:
    """One request: never the token, the key, or the transcript text."""

    time: float  # Unix seconds when the request arrived
    status: int  # HTTP status answered; 0 when the connection was dropped on purpose
    language: str | None
    sha256: str | None  # of the audio file bytes, when a file arrived
    bytes: int  # audio file bytes (0 when none)
    body_bytes: int  # request body bytes read
    encrypted: bool
    filename: str | None
    retry_after_s: float | None
    fault: str | None  # the injected fault, if any
    txn_id: str | None
    text_fault: str | None = None  # the text fault of a 200 answer (text_faults.py), if any
    path: str = TRANSCRIBE_PATH  # which endpoint: transcription or document upload
    query: str | None = None  # a document upload's query string (patient and type ids)
    in_flight: int | None = None  # requests in flight on arrival (this one included if admitted)

    def to_json(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict."""
        return dataclasses.asdict(self)


class Ledger:
    """Thread-safe list of entries; appends each to `path` (mode 0600) when one is given."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._entries: list[LedgerEntry] = []
        self._lock = threading.Lock()

    @property
    def path(self) -> Path | None:
        """The JSON-lines file, if any."""
        return self._path

    def record(self, entry: LedgerEntry) -> None:
        """Keep one entry; raises OSError if the ledger file cannot be written."""
        with self._lock:
            self._entries.append(entry)
            if self._path is not None:
                line = json.dumps(entry.to_json(), separators=(",", ":")) + "\n"
                flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
                fd = os.open(self._path, flags, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8") as handle:
                    handle.write(line)

    def entries(self) -> list[LedgerEntry]:
        """A copy of all entries so far, oldest first."""
        with self._lock:
            return list(self._entries)

    def statuses(self) -> list[int]:
        """The status of every request so far, oldest first."""
        return [entry.status for entry in self.entries()]

    def clear(self) -> None:
        """Forget the in-memory entries (the file, if any, is kept)."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def open_ledger(path: Path | None) -> Ledger:
    """A Ledger whose file (if any) can be appended to, checked once before the server
    listens (else each request would answer 500); raises ConfigError naming the option."""
    if path is not None:
        if not path.parent.is_dir():
            raise ConfigError(
                f"devserver: {_NAMED_BY}: cannot write {path}: folder {path.parent} does not exist"
            )
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(f"devserver: {_NAMED_BY}: cannot write {path} ({reason})") from exc
    return Ledger(path)
