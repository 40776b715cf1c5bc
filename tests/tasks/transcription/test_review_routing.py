"""MEDASR_REVIEW__REQUIRED=measured and the sample: who is held, sampled and filed, and why.

A synthetic history in a real SQLite store: dr-good at 0.99, dr-poor at 0.95, dr-new
never reviewed. The routing reads the store's standings as a run does.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import soundfile

from devserver.tone import encode_tone_dictation
from storage.accuracy_records import NoteAccuracy, Standing
from storage.interface import UnitOfWorkFactory
from storage.sources import SourceFile
from tasks.transcription.review_routing import ReviewRouting, recording_identity, sampled
from tests.helpers.transcription import TEXT, run_once

START = datetime(2026, 11, 1, tzinfo=UTC)


def add_history(
    store: UnitOfWorkFactory, *, author: str, notes: int, errors: int, first: int = 0
) -> None:
    """`notes` reviewed notes of 100 words and `errors` errors each, one a minute."""
    uris = [f"/history/{author}/{first + n}.wav" for n in range(notes)]
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(uri, 1, "v1") for uri in uris], language="en-IN")
        found = uow.item_queries.find_items(source_uris=uris, language="en-IN")
        ids = {uri: item.id for uri, item in found.items()}
        for n, uri in enumerate(uris):
            uow.accuracy.record_accuracy(
                NoteAccuracy(
                    item_id=ids[uri], revision=1, reviewer="rev",
                    reviewed_at=START + timedelta(minutes=first + n), language="en-IN",
                    author=author, department="cardio", words=100, substitutions=errors,
                    deletions=0, insertions=0, accuracy=1 - errors / 100,
                )
            )  # fmt: skip


def routing_of(store: UnitOfWorkFactory, **bounds: float) -> ReviewRouting:
    with store.unit_of_work(read_only=True) as uow:
        standings = uow.accuracy.standings(window_notes=50)
    settings = {"min_accuracy": 0.97, "min_notes": 20, "sample_rate": 0.05} | bounds
    return ReviewRouting.of(mode="measured", standings=standings, **settings)  # type: ignore[arg-type]


def reasons(routing: ReviewRouting, author: str, *, count: int = 400) -> list[str | None]:
    return [
        routing.reason_for(
            flags=[],
            metadata={"author": author, "department": "cardio"},
            language="en-IN",
            identity=recording_identity(
                source_uri=f"/night/{author}/{n}.wav", language="en-IN", source_version="v1"
            ),
        )
        for n in range(count)
    ]


def test_three_authors_held_sampled_and_filed(store: UnitOfWorkFactory) -> None:
    add_history(store, author="dr-good", notes=30, errors=1)  # 0.99
    add_history(store, author="dr-poor", notes=30, errors=5)  # 0.95
    routing = routing_of(store)

    assert set(reasons(routing, "dr-poor")) == {"author below 0.97"}
    assert set(reasons(routing, "dr-new")) == {"new author"}
    good = reasons(routing, "dr-good")
    assert set(good) == {None, "sample"}
    # 400 recordings at 5 %: 20 expected; P(outside 6..40) < 1e-4 (binomial)
    assert 6 <= good.count("sample") <= 40
    assert reasons(routing_of(store), "dr-good") == good  # reproducible: the same sample


def test_the_window_is_the_newest_notes_and_min_notes_counts_all(
    store: UnitOfWorkFactory,
) -> None:
    add_history(store, author="dr-better", notes=40, errors=20)  # 0.80 long ago
    add_history(store, author="dr-better", notes=50, errors=1, first=40)  # 0.99 lately
    add_history(store, author="dr-few", notes=19, errors=0)
    with store.unit_of_work(read_only=True) as uow:
        found = {(s.column, s.value): s for s in uow.accuracy.standings(window_notes=50)}
    assert found[("author", "dr-better")] == Standing("author", "dr-better", 90, 5000, 50)
    assert found[("department", "cardio")].reviewed == 109
    routing = routing_of(store, sample_rate=0.0)
    assert set(reasons(routing, "dr-better")) == {None}
    assert set(reasons(routing, "dr-few")) == {"new author"}  # 19 < 20


def test_without_an_author_the_department_then_the_language_judges() -> None:
    standings = [
        Standing("department", "cardio", 30, 3000, 150),  # 0.95
        Standing("language", "en-IN", 30, 3000, 0),
    ]
    routing = ReviewRouting.of(
        mode="measured", min_accuracy=0.97, min_notes=20, sample_rate=0.0, standings=standings
    )
    ask = {"flags": [], "language": "en-IN", "identity": "x"}
    assert routing.reason_for(metadata={"department": "cardio"}, **ask) == "department below 0.97"  # type: ignore[arg-type]
    assert routing.reason_for(metadata={}, **ask) is None  # type: ignore[arg-type]
    assert routing.reason_for(metadata={"department": "neuro"}, **ask) == "new department"  # type: ignore[arg-type]
    flagged = routing.reason_for(flags=["repetition"], metadata={}, language="en-IN", identity="x")
    assert flagged == "flag: repetition"


def test_the_sample_share_holds_in_every_mode() -> None:
    routing = ReviewRouting.of(mode="flagged", min_accuracy=0.97, min_notes=20, sample_rate=0.1)
    held = [
        routing.reason_for(flags=[], metadata={}, language="en-IN", identity=f"/a/{n}.wav")
        for n in range(2000)
    ]
    # 200 expected out of 2000 at 10 %; P(outside 150..250) < 1e-3
    assert 150 <= held.count("sample") <= 250
    assert set(held) == {None, "sample"}
    assert not any(sampled(f"/a/{n}.wav", rate=0.0) for n in range(100))


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    soundfile.write(folder / "note.wav", encode_tone_dictation(TEXT), 16000, subtype="PCM_16")
    return folder


def test_a_routine_hold_waits_with_its_reason_and_counts_as_done(
    store: UnitOfWorkFactory, devserver_factory, recording: Path
) -> None:
    routing = ReviewRouting.of(mode="measured", min_accuracy=0.97, min_notes=20, sample_rate=0)
    [outcome] = run_once(store, devserver_factory(), recording, routing=routing)
    assert (outcome.outcome, outcome.hold_reason) == ("done", "new language")
    with store.unit_of_work(read_only=True) as uow:
        item = uow.item_queries.find_item(source_uri=str(recording / "note.wav"), language="en-IN")
    assert item is not None
    assert item.status == "needs_review"
    assert item.extras["review_reason"] == "new language"
