"""The one reuse decision (tasks/transcription/reuse.py) of the run and the dry run."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from storage.interface import UnitOfWorkFactory
from storage.records import ChunkRecord, ItemRecord
from tasks.transcription.reuse import ReuseFacts, decide_reuse, read_reuse_facts, reused_extras

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OLD, NEW = "a" * 64, "b" * 64


def item(*, id: int = 1, sha256: str | None = None, text: str | None = None) -> ItemRecord:
    return ItemRecord(
        id=id, source_uri=f"/in/{id}.wav", language="en-IN", source_version="v", sha256=sha256,
        size_bytes=10, duration_ms=5000 if text else None, status="processing", error_kind=None,
        error_message=None, retryable=False, attempts=1, next_attempt_at=None, lease_owner="w",
        lease_expires_at=None, text=text, extras={}, chunk_count=2 if text else None,
        created_at=NOW, updated_at=NOW, done_at=None,
    )  # fmt: skip


def chunk(index: int, start_ms: int, end_ms: int, status: str = "done") -> ChunkRecord:
    return ChunkRecord(1, index, start_ms, end_ms, 100, status, "t", 1, None, None, NOW)


OWN = item(sha256=NEW, text="own")
TWIN = replace(item(id=9, sha256=NEW, text="twin text"), status="done")
ANSWERED = {0: chunk(0, 0, 7000), 1: chunk(1, 7000, 9000, "silent")}


def case(
    name: str,
    stored: ItemRecord | None,
    facts: ReuseFacts | None = None,
    *,
    reused: int | None = None,
    reset: bool = False,
    answered: dict[int, ChunkRecord] | None = None,
) -> object:
    """What the store holds, the facts read -> reused from (id), chunks reset, chunks reused."""
    return pytest.param(stored, facts or ReuseFacts(), reused, reset, answered or {}, id=name)


# Every case fingerprints the content as NEW.
CASES = [
    case("unregistered, new content", None),
    case("unregistered, a done twin", None, ReuseFacts(twin=TWIN), reused=9),
    case("first fingerprint", item()),
    case("same content done elsewhere", item(), ReuseFacts(twin=TWIN), reused=9),
    case("own transcript beats a twin", OWN, ReuseFacts(twin=TWIN), reused=1),
    case("changed: old transcript void", item(sha256=OLD, text="own"), reset=True),
    case("changed: chunks reset", item(sha256=OLD), ReuseFacts(chunks=ANSWERED), reset=True),
    case("changed to known content", item(sha256=OLD), ReuseFacts(twin=TWIN), reused=9, reset=True),
    case("partly answered", item(sha256=NEW), ReuseFacts(chunks=ANSWERED), answered=ANSWERED),
    case("twin without text", item(sha256=NEW), ReuseFacts(twin=replace(TWIN, text=None))),
]  # fmt: skip


@pytest.mark.parametrize(("stored", "facts", "reused_id", "reset", "answered"), CASES)
def test_the_reuse_decision(
    stored: ItemRecord | None,
    facts: ReuseFacts,
    reused_id: int | None,
    reset: bool,
    answered: dict[int, ChunkRecord],
) -> None:
    decision = decide_reuse(stored, sha256=NEW, facts=facts)

    assert (decision.transcript.id if decision.transcript else None) == reused_id
    assert decision.reuses_transcript is (reused_id is not None)
    assert decision.reset_chunks is reset
    assert dict(decision.answered) == answered


def test_a_twin_is_named_in_the_extras_and_an_own_transcript_is_not() -> None:
    assert reused_extras(item(), TWIN) == {"reused_from": "/in/9.wav"}
    assert reused_extras(item(), item()) == {}


@pytest.mark.parametrize(
    ("stored", "queries"),
    [
        pytest.param(None, {"find_done_with_sha"}, id="unregistered"),
        pytest.param(item(sha256=OLD), {"find_done_with_sha"}, id="changed: no chunk query"),
        pytest.param(
            item(sha256=NEW), {"find_done_with_sha", "done_chunks"}, id="same: chunks read"
        ),
        pytest.param(item(sha256=NEW, text="own"), set(), id="own transcript: nothing read"),
    ],
)
def test_the_facts_read_only_what_the_decision_weighs(
    store: UnitOfWorkFactory, stored: ItemRecord | None, queries: set[str]
) -> None:
    asked: set[str] = set()

    class Counting:
        def __init__(self, inner: object) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> object:
            found = getattr(self._inner, name)
            if name in ("items", "claims", "item_queries", "chunks"):  # a repository of the uow
                return Counting(found)
            asked.add(name)
            return found

    with store.unit_of_work(read_only=True) as uow:
        read_reuse_facts(Counting(uow), stored, sha256=NEW, language="en-IN")  # type: ignore[arg-type]
    assert asked == queries
