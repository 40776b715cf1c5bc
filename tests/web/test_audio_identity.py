"""The audio served is the recording that was transcribed, or none: over a real socket.

After transcription the file is replaced by another patient's recording, overwritten in
place with the same size and time, or made a link to a file outside the source root: the
workstation answers with a page saying so, writes `audio_changed`, and serves no audio.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.review import audit_events
from tests.web.test_pages import client_of
from tests.web.workstation import Served, write_tone_wav

CHANGED = "the recording changed on disk since it was transcribed"


@pytest.fixture
def ann(served: Served) -> Iterator[httpx.Client]:
    with client_of(served) as http:
        yield http


def source_of(tmp_path: Path) -> Path:
    return tmp_path / "ward" / "a.wav"


def refused_as_changed(ann: httpx.Client, served: Served, recording: int, reason: str) -> None:
    served_before = [e.action for e in audit_events(served.store)].count("audio_served")
    answer = ann.get(f"/items/{recording}/audio?start_ms=0&end_ms=1000")
    assert answer.status_code == 409
    assert answer.headers["content-type"].startswith("text/html")
    assert CHANGED in answer.text
    assert answer.headers["cache-control"] == "no-store"
    last = audit_events(served.store)[-1]
    assert (last.action, last.actor, last.item_id) == ("audio_changed", "ann", recording)
    assert last.detail == {"reason": reason}
    assert [e.action for e in audit_events(served.store)].count("audio_served") == served_before


def test_the_unchanged_recording_is_served_and_checked_once_by_its_hash(
    served: Served, ann: httpx.Client, recording: int
) -> None:
    for _ in range(2):
        assert ann.get(f"/items/{recording}/audio?start_ms=0&end_ms=1000").status_code == 200
    assert [e.action for e in audit_events(served.store)][-2:] == ["audio_served"] * 2


def test_another_recording_moved_over_it_is_refused(
    served: Served, ann: httpx.Client, recording: int, tmp_path: Path
) -> None:
    other = write_tone_wav(tmp_path / "other-patient.wav", seconds=5.0)
    os.replace(other, source_of(tmp_path))
    refused_as_changed(ann, served, recording, "changed")


def test_an_overwrite_with_the_same_size_and_time_is_refused_by_the_hash(
    served: Served, ann: httpx.Client, recording: int, tmp_path: Path
) -> None:
    assert ann.get(f"/items/{recording}/audio?start_ms=0&end_ms=1000").status_code == 200
    source = source_of(tmp_path)
    before = source.stat()
    data = bytearray(source.read_bytes())
    data[1000:3000] = bytes(2000)  # another voice of the same length
    source.write_bytes(bytes(data))
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    refused_as_changed(ann, served, recording, "changed")


def test_a_link_to_a_recording_outside_the_source_root_is_never_followed(
    served: Served, ann: httpx.Client, recording: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("elsewhere") / "a.wav"
    source = source_of(Path(served_source(served)))
    shutil.copy2(source, outside)  # the very same bytes: only where they live differs
    source.unlink()
    source.symlink_to(outside)
    refused_as_changed(ann, served, recording, "link_outside")


def served_source(served: Served) -> str:
    """The run's source root the recording fixture recorded."""
    with served.store.unit_of_work(read_only=True) as uow:
        return uow.runs.run_sources()[0]
