"""What was sent (`uow.spend`), read alike by the SQL stores (SQLite, and PostgreSQL
where available): requests, billed ms with a billed minimum, dates, languages, and the
pending audio a capped run leaves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from storage.interface import UnitOfWorkFactory
from storage.records import SourceFile

LISTING = [SourceFile(f"/archive/{name}.wav", 64_000, "v1") for name in "abcd"]


def sent_and_billed(store: UnitOfWorkFactory) -> list[Any]:
    with store.unit_of_work() as uow:
        uow.items.register_items(LISTING[:2], language="hi")
        uow.items.register_items(LISTING[2:], language="ta")
        uow.items.set_item_metadata({LISTING[0].uri: {"department": "cardio"}}, language="hi")
        a, b = uow.claims.claim_batch(owner="w1", language="hi", limit=2, lease_s=60)
    with store.unit_of_work() as uow:
        for index, (start_ms, end_ms, attempts, status) in enumerate(
            [(0, 60_000, 1, "done"), (60_000, 62_000, 3, "done"), (62_000, 70_000, 1, "silent")]
        ):
            uow.chunks.record_chunk_result(
                a.id, lease_token=a.lease_token, index=index, start_ms=start_ms, end_ms=end_ms,
                size_bytes=1, text="t", status=status, attempts=attempts,
            )  # fmt: skip
        uow.claims.finish_item(
            a.id, lease_token=a.lease_token, text="t", duration_ms=70_000, chunk_count=3,
            extras={},
        )  # fmt: skip
        uow.claims.release_items([b.lease_token or ""])
    seen: list[Any] = []
    with store.unit_of_work(read_only=True) as uow:
        for billed_min_ms in (0, 5_000):
            rows = list(uow.spend.sent_recordings(billed_min_ms=billed_min_ms))
            seen.append(
                [
                    (r.language, r.status, r.metadata, r.duration_ms, r.requests, r.billed_ms)
                    for r in rows
                ]
            )
        later = datetime.now(UTC) + timedelta(days=1)
        seen.append(list(uow.spend.sent_recordings(billed_min_ms=0, since=later)))
        [until_later] = uow.spend.sent_recordings(billed_min_ms=0, until=later)
        seen.append(until_later.requests)
        seen.append(list(uow.spend.sent_recordings(billed_min_ms=0, language="ta")))
        seen.append(uow.spend.pending_audio(language=None, source_prefix="/archive"))
        seen.append(uow.spend.pending_audio(language="ta", source_prefix=None))
        seen.append(uow.spend.pending_audio(language=None, source_prefix="/elsewhere"))
    return seen


def test_every_sql_store_reads_what_was_sent_alike(
    store: UnitOfWorkFactory, sqlite_reference: UnitOfWorkFactory
) -> None:
    sql = sent_and_billed(store)

    assert sql == sent_and_billed(sqlite_reference)
    # One minute sent once, two seconds sent three times (a retry billed whole), the
    # silent chunk never; with a 5 s minimum the short chunk is billed 5 s a request.
    assert sql[0] == [("hi", "done", {"department": "cardio"}, 70_000, 4, 60_000 + 3 * 2_000)]
    assert sql[1] == [("hi", "done", {"department": "cardio"}, 70_000, 4, 60_000 + 3 * 5_000)]
    assert sql[2] == []
    assert sql[3] == 4
    assert sql[4] == []
    assert (sql[5].recordings, sql[5].measured_ms, sql[5].unmeasured_bytes) == (3, 0, 3 * 64_000)
    assert (sql[6].recordings, sql[6].measured_ms, sql[6].unmeasured_bytes) == (2, 0, 2 * 64_000)
    assert (sql[7].recordings, sql[7].unmeasured_bytes) == (0, 0)


ODD_COLUMNS = ["department", 'a "quoted" one', "ward.bed", "dept's", "$[0]", "ünït", "*"]


def columns_seen(store: UnitOfWorkFactory) -> tuple[list[bool], set[str]]:
    with store.unit_of_work() as uow:
        uow.items.register_items(LISTING, language="hi")
        metadata = {LISTING[0].uri: dict.fromkeys(ODD_COLUMNS[:4], "x")}
        metadata[LISTING[1].uri] = dict.fromkeys(ODD_COLUMNS[4:], "")  # known, no value
        uow.items.set_item_metadata(metadata, language="hi")
    with store.unit_of_work(read_only=True) as uow:
        asked = [*ODD_COLUMNS, "departmnet", "ward", "a", "", "%"]
        return [uow.spend.has_column(c) for c in asked], uow.spend.columns()


def test_every_sql_store_knows_the_manifest_columns_recordings_hold(
    store: UnitOfWorkFactory, sqlite_reference: UnitOfWorkFactory
) -> None:
    """`status --by` refuses a column no recording holds: whatever the column's name (a
    quote, a dot, a JSON path's own characters), a held one is known, another is not."""
    found, names = columns_seen(store)
    assert (found, names) == columns_seen(sqlite_reference)
    assert found == [True] * len(ODD_COLUMNS) + [False] * 5
    assert names == set(ODD_COLUMNS)
