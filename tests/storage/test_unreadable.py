"""Files that are listed but cannot be read are recorded as failed items, not just logged.

Listing marks them `unreadable` (a FIFO, a broken link, a link loop); a file still being
written is only "not listed" and waits for the next run. The repository records the
unreadable ones as failed (source_unreadable, permanent, the reason in the message) and
sends them back to pending once a listing finds them readable.
"""

from __future__ import annotations

import os
from pathlib import Path

from storage.database import Store
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


def record(store: Store, *files: SkippedFile) -> int:
    with store.repository() as repo:
        return repo.record_unreadable(list(files), language=LANG)


def item(store: Store, uri: str):
    with store.repository(read_only=True) as repo:
        return repo.find_item(source_uri=uri, language=LANG)


def test_unreadable_files_are_recorded_once_as_permanent_failures(store: Store) -> None:
    pipe = SkippedFile("/archive/pipe.wav", "not a regular file", unreadable=True)

    assert record(store, pipe) == 1
    assert record(store, pipe) == 0  # the next night: nothing new to report

    row = item(store, pipe.uri)
    assert (row.status, row.error_kind, row.retryable) == ("failed", "source_unreadable", False)
    assert row.error_message == "cannot read /archive/pipe.wav: not a regular file"


def test_a_done_item_keeps_its_transcript_when_its_file_turns_unreadable(store: Store) -> None:
    with store.repository() as repo:
        repo.register_items([SourceFile("/archive/a.wav", 10, "v1")], language=LANG)
        (claimed,) = repo.claim_batch(owner="w1", language=LANG, limit=1, lease_s=60)
        repo.finish_item(
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


def test_a_file_readable_again_goes_back_to_pending(store: Store) -> None:
    record(store, SkippedFile("/archive/b.wav", "no permission to read", unreadable=True))

    with store.repository() as repo:
        registered = repo.register_items([SourceFile("/archive/b.wav", 10, "v1")], language=LANG)

    assert registered.changed == 1
    row = item(store, "/archive/b.wav")
    assert (row.status, row.error_kind, row.error_message) == ("pending", None, None)
