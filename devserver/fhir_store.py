"""The devserver's FHIR resources: DocumentReferences by id, searchable by identifier.

The R4 `identifier` search parameter of DocumentReference covers both
`masterIdentifier` and `identifier`; a token is `system|value`, `|value` (no system)
or `value` (any system). Thread-safe: the conditional create's search and insert
happen under one lock, so two racing creates cannot both find nothing.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass
class CreateOutcome:
    """What a conditional create did: created (201), matched one (200) or several (412)."""

    status: int
    resource: dict[str, Any] | None
    matches: int


@dataclass
class FhirStore:
    """DocumentReferences by id, in creation order."""

    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def search(self, token: str) -> list[dict[str, Any]]:
        """Resources whose masterIdentifier or identifier match the token."""
        with self._lock:
            return self._search(token)

    def _search(self, token: str) -> list[dict[str, Any]]:
        matches = _token_matcher(token)
        return [r for r in self.resources.values() if any(matches(i) for i in _identifiers(r))]

    def create(self, resource: dict[str, Any], *, if_none_exist: str | None) -> CreateOutcome:
        """Create `resource` (a new id and meta), unless the If-None-Exist token matches."""
        with self._lock:
            if if_none_exist is not None:
                found = self._search(if_none_exist)
                if len(found) == 1:
                    return CreateOutcome(200, found[0], 1)
                if found:
                    return CreateOutcome(412, None, len(found))
            stored = dict(resource)
            stored["id"] = uuid.uuid4().hex
            stored["meta"] = {"versionId": "1", "lastUpdated": datetime.now(UTC).isoformat()}
            self.resources[stored["id"]] = stored
            return CreateOutcome(201, stored, 0)

    def count_by_identifier(self) -> dict[str, int]:
        """How many resources carry each masterIdentifier value (1 each: nothing doubled)."""
        with self._lock:
            counts: dict[str, int] = {}
            for resource in self.resources.values():
                value = (resource.get("masterIdentifier") or {}).get("value", "")
                counts[value] = counts.get(value, 0) + 1
            return counts


def _identifiers(resource: dict[str, Any]) -> list[dict[str, Any]]:
    found = list(resource.get("identifier") or [])
    if resource.get("masterIdentifier"):
        found.append(resource["masterIdentifier"])
    return [i for i in found if isinstance(i, dict)]


def _token_matcher(token: str) -> Callable[[dict[str, Any]], bool]:
    if "|" not in token:
        return lambda identifier: identifier.get("value") == token
    system, _, value = token.partition("|")

    def matches(identifier: dict[str, Any]) -> bool:
        if system == "":
            return identifier.get("system") in (None, "") and identifier.get("value") == value
        return identifier.get("system") == system and (
            value == "" or identifier.get("value") == value
        )

    return matches
