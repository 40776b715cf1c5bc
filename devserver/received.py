"""What the devserver's docs endpoint accepted, kept so a person can see what was filed.

The real service keeps what it is sent; the stand-in kept only a hash in its ledger, so a
user trying `medasr deliver` could not see what went out. The last RECEIVED_MAX documents
are kept in memory (gone when the devserver stops), shown by received_route.py.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

RECEIVED_MAX = 500  # a walkthrough's worth; older documents are dropped first


@dataclass(frozen=True)
class ReceivedDocument:
    """One accepted upload: its answer's id, when, the file's name, query and content."""

    document_id: str
    received_at: str  # ISO 8601, UTC ("...Z")
    filename: str | None
    query: dict[str, str]
    encrypted: bool
    bytes: int
    sha256: str
    text: str  # the content as UTF-8 (undecodable bytes replaced)


@dataclass
class ReceivedDocuments:
    """The last RECEIVED_MAX accepted documents, oldest first; thread-safe."""

    _kept: deque[ReceivedDocument] = field(default_factory=lambda: deque(maxlen=RECEIVED_MAX))
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def keep(self, document: ReceivedDocument) -> None:
        with self._lock:
            self._kept.append(document)

    def as_json(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(document) for document in self._kept]
