"""Files that are listed but cannot be read are recorded as failed items, not just logged.

Listing marks them `unreadable` (a FIFO, a broken link, a link loop); a file still being
written is only "not listed" and waits for the next run. The repository records the
unreadable ones as failed (source_unreadable, permanent, the reason in the message) and
sends them back to pending once a listing finds them readable.
"""

from __future__ import annotations

import os
from pathlib import Path

from storage.interface import UnitOfWorkFactory
from storage.records import SkippedFile, SourceFile
from storage.sources import list_audio

LANG = "en-IN"


def test_listing_tells_unreadable_files_from_files_being_written(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.wav")
    os.symlink("nowhere.wav", tmp_path / "gone.wav")
    os.symlink("loop-b.wav", tmp_path / "loop-a.wav")
    os.symlink("loop-a.wav", tmp_path / "loop-b.wav")
    os.symlink(".", tmp_path / "again")
    (tmp_path / "recording.wav").write_bytes(b"RIFF")  # modified just now

    listing = list_audio(str(tmp_path), settle_s=60)

    flags = {Path(s.uri).name: s.unreadable for s in listing.skipped}
    assert flags == {
        "pipe.wav": True,
        "gone.wav": True,
        "loop-a.wav": True,
        "loop-b.wav": True,
        "again": False,  # a folder seen twice: nothing to record
        "recording.wav": False,  # still being written: the next run takes it
    }
    assert listing.files == []


def record(store: UnitOfWorkFactory, *files: SkippedFile) -> int:
    with store.unit_of_work() as uow:
        return uow.items.record_unreadable(list(files), language=LANG)


def item(store: UnitOfWorkFactory, uri: str):
    with store.unit_of_work(read_only=True) as uow:
        return uow.item_queries.find_item(source_uri=uri, language=LANG)


def test_unreadable_files_are_recorded_once_as_permanent_failures(store: UnitOfWorkFactory) -> None:
    pipe = SkippedFile("/archive/pipe.wav", "not a regular file", unreadable=True)

    assert record(store, pipe) == 1
    assert record(store, pipe) == 0  # the next night: nothing new to report

    row = item(store, pipe.uri)
    assert (row.status, row.error_kind, row.retryable) == ("failed", "source_unreadable", False)
    assert row.error_message == "cannot read /archive/pipe.wav: not a regular file"


def test_a_done_item_keeps_its_transcript_when_its_file_turns_unreadable(
    store: UnitOfWorkFactory,
) -> None:
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile("/archive/a.wav", 10, "v1")], language=LANG)
        (claimed,) = uow.claims.claim_batch(owner="w1", language=LANG, limit=1, lease_s=60)
        uow.claims.finish_item(
            claimed.id,
            lease_token=claimed.lease_token,
            text="kept",
            duration_ms=1,
            chunk_count=1,
            extras={},
        )

    assert record(store, SkippedFile("/archive/a.wav", "symbolic link loop", unreadable=True)) == 0

    assert (item(store, "/archive/a.wav").status, item(store, "/archive/a.wav").text) == (
        "done",
        "kept",
    )


def test_a_file_readable_again_goes_back_to_pending(store: UnitOfWorkFactory) -> None:
    record(store, SkippedFile("/archive/b.wav", "no permission to read", unreadable=True))

    with store.unit_of_work() as uow:
        registered = uow.items.register_items(
            [SourceFile("/archive/b.wav", 10, "v1")], language=LANG
        )

    assert registered.changed == 1
    row = item(store, "/archive/b.wav")
    assert (row.status, row.error_kind, row.error_message) == ("pending", None, None)
