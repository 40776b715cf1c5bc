"""Flow fixtures: a Prefect test harness, a real Prefect server, a mixed corpus of recordings,
pinned settings."""

from __future__ import annotations

import gc
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile
from prefect.testing.utilities import prefect_test_harness

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from tasks.audio import find_ffmpeg
from tests.flows.prefect_server import PrefectServer, running_prefect_server
from tests.helpers.flows import TOKEN, Corpus, settings_for

TEXTS = {
    "admission.wav": "patient admitted with fever. blood cultures sent.",
    "ward/round.mp3": "day 2 on iv antibiotics. afebrile overnight.",
    "clinic letter.m4a": "review in clinic in 6 weeks with repeat bloods.",
}
LONG_NAME = "long/dictation.wav"
LONG_TEXT = " ".join(
    f"line {i}. chest clear, heart sounds normal, abdomen soft." for i in range(1, 9)
)


# Prefect 3.8's own sync API client (prefect.results -> get_client(sync_client=True)) leaves
# its sockets to the garbage collector in every in-process flow run, even a bare @flow with
# one @task: not ours to close. Ignored only for the tests that run flows in this process.
PREFECT_CLIENT_SOCKETS = (
    "ignore:unclosed <socket.socket:ResourceWarning",
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "prefect_harness" in getattr(item, "fixturenames", ()):
            for entry in PREFECT_CLIENT_SOCKETS:
                item.add_marker(pytest.mark.filterwarnings(entry))


@pytest.fixture(autouse=True)
def _prefect_client_sockets_collected(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test that ran flows here, collect the sockets Prefect's client left to the
    garbage collector while that test's ignore entries still apply: otherwise a later
    collection, in whatever test this worker runs next, reports them as that test's."""
    yield
    if "prefect_harness" in request.fixturenames:
        gc.collect()


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    with prefect_test_harness(server_startup_timeout=60):
        yield


def _encode(src: Path, dst: Path, *codec: str) -> None:
    subprocess.run(
        [find_ffmpeg(), "-nostdin", "-loglevel", "error", "-y", "-i", str(src), *codec, str(dst)],
        check=True,
    )


@pytest.fixture(scope="session")
def corpus_template(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    root = tmp_path_factory.mktemp("corpus")
    scratch = tmp_path_factory.mktemp("scratch")
    for name, text in TEXTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".wav"):
            soundfile.write(path, encode_tone_dictation(text), 16000, subtype="PCM_16")
            continue
        wav = scratch / "src.wav"
        stereo = np.repeat(encode_tone_dictation(text, sample_rate_hz=44100)[:, None], 2, axis=1)
        soundfile.write(wav, stereo, 44100, subtype="PCM_16")
        codec = ("-c:a", "libmp3lame", "-b:a", "96k") if name.endswith(".mp3") else ("-c:a", "aac")
        _encode(wav, path, *codec)
    long_path = root / LONG_NAME
    long_path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(long_path, encode_tone_dictation(LONG_TEXT), 16000, subtype="PCM_16")
    (root / "corrupt.mp3").write_bytes(b"ID3\x03\x00\x00\x00" + bytes(range(256)) * 8)
    (root / "notes.wav").write_text("this is a text file, not audio\n")
    soundfile.write(root / "silence.wav", np.zeros(16000 * 2, dtype=np.int16), 16000)
    return Corpus(
        root=root,
        texts={**TEXTS, LONG_NAME: LONG_TEXT},
        bad={"corrupt.mp3": "failed", "notes.wav": "failed", "silence.wav": "skipped"},
    )


@pytest.fixture
def corpus(corpus_template: Corpus, tmp_path: Path) -> Corpus:
    root = tmp_path / "recordings"
    shutil.copytree(corpus_template.root, root)
    return Corpus(root=root, texts=corpus_template.texts, bad=corpus_template.bad)


@pytest.fixture
def prefect_server(tmp_path: Path) -> Iterator[PrefectServer]:
    """A real `prefect server start` on loopback with its own PREFECT_HOME; stopped after."""
    with running_prefect_server(tmp_path / "prefect-server") as server:
        yield server


@pytest.fixture
def flow_server() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0) as server:
        yield server


@pytest.fixture
def pinned(
    prefect_harness: None, flow_server: RunningDevServer, tmp_path: Path
) -> Iterator[Settings]:
    with pinned_settings(settings_for(flow_server, tmp_path / "medasr.db")) as settings:
        yield settings
