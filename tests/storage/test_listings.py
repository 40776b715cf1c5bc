"""`uow.listings` on SQLite and PostgreSQL: sources noted once, not-audio names replaced
by each listing and forgotten by a purge; a noted source names recordings like a run's."""

from __future__ import annotations

from storage.interface import UnitOfWorkFactory


def test_a_listing_replaces_its_sources_names_and_a_purge_forgets_them(
    store: UnitOfWorkFactory,
) -> None:
    with store.unit_of_work() as uow:
        first = uow.listings.note_source("/archive")
        assert uow.listings.note_source("/archive") == first  # noted once
        uow.listings.record_not_audio(
            "/archive", count=3, by_reason={".txt file": 3}, names=["a.txt", "b.txt", "c.txt"]
        )
        uow.listings.record_not_audio("s3://bucket/in", count=0, by_reason={}, names=[])
    with store.unit_of_work() as uow:
        uow.listings.record_not_audio(
            "/archive", count=1, by_reason={".txt file": 1}, names=["b.txt"]
        )
    with store.unit_of_work(read_only=True) as uow:
        [listing] = uow.listings.not_audio()
        assert (listing.source, listing.count, listing.names) == ("/archive", 1, ["b.txt"])
        assert listing.by_reason == {".txt file": 1}
        assert uow.listings.sources() == ["/archive", "s3://bucket/in"]
        assert "/archive" in uow.runs.run_sources()  # no run row: the listing names it
    with store.unit_of_work() as uow:
        assert uow.listings.forget_not_audio() == 1
    with store.unit_of_work(read_only=True) as uow:
        assert uow.listings.not_audio() == []
        assert uow.listings.sources() == ["/archive", "s3://bucket/in"]
