"""The local listing streams: a generator in URI order, one stat per file, nothing held whole."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from storage import local_files, sources
from storage.sources import list_audio

HOUR_AGO_S = 3600


def put(root: Path, relative: str, *, age_s: float = HOUR_AGO_S) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"RIFF....WAVE")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_the_listing_is_a_generator_that_reads_folders_as_it_goes(tmp_path: Path) -> None:
    for day in ("2024/01/01", "2024/01/02", "2024/02/01"):
        put(tmp_path, f"{day}/a.wav")
    stream = sources.iter_audio(str(tmp_path), settle_s=0)
    first = next(stream.files)
    assert first.uri == str(tmp_path / "2024/01/01/a.wav")
    # A folder not entered yet is read when the consumer gets there, not before.
    late = put(tmp_path, "2024/02/01/b.wav")
    rest = [f.uri for f in stream.files]
    assert rest == [
        str(tmp_path / "2024/01/02/a.wav"),
        str(tmp_path / "2024/02/01/a.wav"),
        str(late),
    ]


def test_the_stream_is_in_uri_order_like_the_whole_listing(tmp_path: Path) -> None:
    for relative in ("d.wav", "d/x.wav", "d0.wav", "c/deep/er/1.wav", "c.wav", "b/2.wav", "a.WAV"):
        put(tmp_path, relative)
    streamed = [f.uri for f in sources.iter_audio(str(tmp_path), settle_s=0).files]
    assert streamed == sorted(streamed)
    assert streamed == [f.uri for f in list_audio(str(tmp_path), settle_s=0).files]
    assert len(streamed) == 7


def test_a_settled_file_costs_one_stat_and_no_access_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(50):
        put(tmp_path, f"2024/{i % 5:02d}/{i:03d}.wav")
    calls = {"stat": 0, "access": 0}
    real_stat, real_access = os.stat, os.access

    def counting_stat(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["stat"] += 1
        return real_stat(*args, **kwargs)

    def counting_access(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["access"] += 1
        return real_access(*args, **kwargs)

    monkeypatch.setattr(local_files.os, "stat", counting_stat)
    monkeypatch.setattr(local_files.os, "access", counting_access)
    listed = list_audio(str(tmp_path), settle_s=2).files

    assert len(listed) == 50
    # The root's own stat only: each file's information comes from its DirEntry.
    assert calls == {"stat": 1, "access": 0}


def test_a_recent_file_still_gets_its_second_look(tmp_path: Path) -> None:
    path = put(tmp_path, "fresh.wav", age_s=0)
    first = os.stat(path)
    with path.open("ab") as handle:
        handle.write(b"more")
    skipped: list = []
    assert local_files._second_look([(str(path), first)], skipped=skipped) == []
    assert "changed while listing" in skipped[0].reason
