"""Audio of a recording kept in a bucket: fetched over the real S3 wire protocol (moto on
loopback) into a private folder that is gone when the answer ends, however it ends."""

from __future__ import annotations

import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import fsspec
import httpx
import pytest
from imageio_ffmpeg import get_ffmpeg_exe

from storage.review_interface import ReviewStore
from tests.helpers.review import LANG, Segment, add_transcribed, file_fingerprint
from tests.storage_servers import S3Server
from tests.web.test_pages import client_of, dominant_hz
from tests.web.workstation import serve, write_tone_wav

_DISCONNECT_WAIT_S = 30.0  # a failure bound only: the folder goes as soon as the server notices


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the workstation puts its copies (TMPDIR of this process), watched by the tests."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def write_m4a_index_at_end(path: Path, wav: Path) -> Path:
    """AAC in an MP4 whose index (moov) follows the audio: unreadable through a pipe."""
    subprocess.run(
        [get_ffmpeg_exe(), "-nostdin", "-loglevel", "error", "-i", str(wav), "-c:a", "aac",
         "-b:a", "64k", "-movflags", "-faststart", "-y", str(path)],
        check=True,
    )  # fmt: skip
    assert path.read_bytes().rfind(b"moov") > path.read_bytes().find(b"mdat")
    return path


@pytest.fixture
def in_bucket(
    review_store: ReviewStore,
    accounts: None,
    s3_server: S3Server,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, int]:
    """Two recordings in a bucket (a WAV of 9 s, an m4a of 60 s); their item ids by kind."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint_url)
    wav = write_tone_wav(tmp_path / "a.wav", seconds=9.0)
    long_wav = write_tone_wav(tmp_path / "long.wav", seconds=60.0)
    m4a = write_m4a_index_at_end(tmp_path / "b.m4a", long_wav)
    client = s3_server.client()
    client.upload_file(str(wav), s3_bucket, "ward/a.wav")
    client.upload_file(str(m4a), s3_bucket, "ward/b.m4a")
    client.upload_file(str(m4a), s3_bucket, "ward/padded.m4a")
    with review_store.unit_of_work() as uow:
        uow.runs.start_run(source=f"s3://{s3_bucket}", language=LANG)
    segments = [Segment(0, 3000, "one"), Segment(3000, 6000, "two"), Segment(6000, 9000, "x")]
    long = [Segment(0, 30_000, "one"), Segment(30_000, 60_000, "two")]
    return {
        "wav": add_transcribed(
            review_store,
            f"s3://{s3_bucket}/ward/a.wav",
            segments=segments,
            **file_fingerprint(wav),
        ),
        "m4a": add_transcribed(
            review_store, f"s3://{s3_bucket}/ward/b.m4a", segments=long, **file_fingerprint(m4a)
        ),
        # Stored as 20 minutes: the answer (38 MB, silence after 60 s) outlasts any socket buffer.
        "padded": add_transcribed(
            review_store,
            f"s3://{s3_bucket}/ward/padded.m4a",
            segments=[Segment(0, 1_200_000, "x")],
            **file_fingerprint(m4a),
        ),
        "gone": add_transcribed(review_store, f"s3://{s3_bucket}/ward/gone.wav", segments=long),
    }


@pytest.fixture
def ann(review_store: ReviewStore, in_bucket: dict[str, int]) -> Iterator[httpx.Client]:
    with serve(review_store) as served, client_of(served) as http:
        yield http


def test_a_stretch_of_a_remote_recording_is_served_and_its_copy_is_gone(
    ann: httpx.Client, in_bucket: dict[str, int], temp_dir: Path
) -> None:
    # The pitch is 200 + 20 t Hz: the stretch 6-7 s sounds at about 330 Hz.
    served = ann.get(f"/items/{in_bucket['wav']}/audio?start_ms=6000&end_ms=7000")
    assert served.status_code == 200, served.text
    assert len(served.content) == 44 + 2 * 16_000 == int(served.headers["content-length"])
    assert abs(dominant_hz(served.content) - 330) < 15
    assert list(temp_dir.iterdir()) == []


def test_an_m4a_with_its_index_at_the_end_is_decoded_from_a_path(
    ann: httpx.Client, in_bucket: dict[str, int], temp_dir: Path
) -> None:
    # 50-51 s of the sweep: about 1200 Hz (a pipe would give 0 s of audio: all silence).
    served = ann.get(f"/items/{in_bucket['m4a']}/audio?start_ms=50000&end_ms=51000")
    assert served.status_code == 200, served.text
    assert abs(dominant_hz(served.content) - 1210) < 25
    assert list(temp_dir.iterdir()) == []


def test_ranges_of_a_remote_recording(
    ann: httpx.Client, in_bucket: dict[str, int], temp_dir: Path
) -> None:
    url = f"/items/{in_bucket['wav']}/audio"
    whole = ann.get(url).content
    assert len(whole) == 44 + 2 * 9 * 16_000
    part = ann.get(url, headers={"Range": "bytes=100001-160000"})
    assert part.status_code == 206
    assert part.headers["content-range"] == f"bytes 100001-160000/{len(whole)}"
    assert part.content == whole[100001:160001]
    assert list(temp_dir.iterdir()) == []


def test_a_client_gone_mid_stream_leaves_nothing_on_disk(
    ann: httpx.Client, in_bucket: dict[str, int], temp_dir: Path
) -> None:
    with ann.stream("GET", f"/items/{in_bucket['padded']}/audio") as answer:
        assert answer.status_code == 200
        # Held, not discarded: a dropped httpx iterator closes the connection at once.
        pieces = answer.iter_raw(4096)
        first = next(pieces)
        assert first.startswith(b"RIFF")
        [folder] = list(temp_dir.iterdir())  # the copy being decoded, in a private folder
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert int(answer.headers["content-length"]) == 44 + 2 * 1200 * 16_000
        answer.close()  # mid-stream: most of the 38 MB is still to come
    ann.close()
    deadline = time.monotonic() + _DISCONNECT_WAIT_S
    while list(temp_dir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.01)  # polls for the server's clean-up; the bound only catches a leak
    assert list(temp_dir.iterdir()) == []


def test_a_recording_missing_from_its_bucket_is_404(
    ann: httpx.Client, in_bucket: dict[str, int], temp_dir: Path
) -> None:
    answer = ann.get(f"/items/{in_bucket['gone']}/audio")
    assert answer.status_code == 404
    assert "not there" in answer.text
    assert list(temp_dir.iterdir()) == []


def test_a_bucket_that_does_not_answer_is_502_and_leaves_nothing(
    ann: httpx.Client,
    in_bucket: dict[str, int],
    temp_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3 = fsspec.get_filesystem_class("s3")
    s3.clear_instance_cache()  # fsspec keeps one client per set of options: not the moto one
    try:
        answer = ann.get(f"/items/{in_bucket['wav']}/audio?start_ms=0&end_ms=1000")
    finally:
        s3.clear_instance_cache()
    assert answer.status_code == 502
    assert answer.text.startswith("the recording could not be fetched from its source: ")
    assert "testing" not in answer.text  # the credentials
    assert list(temp_dir.iterdir()) == []


def test_an_object_overwritten_with_another_recording_is_refused_and_its_copy_removed(
    ann: httpx.Client,
    in_bucket: dict[str, int],
    temp_dir: Path,
    tmp_path: Path,
    s3_server: S3Server,
    s3_bucket: str,
) -> None:
    other = write_tone_wav(tmp_path / "other-patient.wav", seconds=9.0, rate_hz=8_000)
    s3_server.client().upload_file(str(other), s3_bucket, "ward/a.wav")
    answer = ann.get(f"/items/{in_bucket['wav']}/audio?start_ms=0&end_ms=1000")
    assert answer.status_code == 409
    assert "the recording changed on disk since it was transcribed" in answer.text
    assert list(temp_dir.iterdir()) == []
