"""Finding the ffmpeg binary (tasks/audio/ffmpeg_binary.py).

imageio-ffmpeg's own lookup proves its binary by running `ffmpeg -version` in medasr's
process group. A terminal's Ctrl-C that reached that child made the lookup report no
ffmpeg at all (a RuntimeError), and a recording of the interrupted run failed as an
internal error instead of staying pending (seen in tests/reliability/
test_terminal_interrupt.py under load). The binary is now found without running it, and
an ffmpeg that cannot be found is a setting to fix, named in one sentence.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import imageio_ffmpeg
import pytest

from config.errors import ConfigError
from tasks.audio import ffmpeg_binary
from tasks.audio.ffmpeg import find_ffmpeg
from tasks.errors import FfmpegMissing
from tests.helpers.audio import path_without_ffmpeg
from tests.helpers.fresh import json_printed_by

ROOT = Path(__file__).resolve().parents[3]

# In a fresh interpreter (nothing cached): every process started while ffmpeg is found.
_LOOKUP = """
import json, sys
from tasks.audio.ffmpeg import find_ffmpeg
started = []
PROCESS_EVENTS = ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.system")
sys.addaudithook(lambda event, args: started.append(event) if event in PROCESS_EVENTS else None)
found = find_ffmpeg()
print(json.dumps({"found": found, "started": started}))
"""


@pytest.fixture
def fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """find_ffmpeg forgets what it found, before and after the test."""
    monkeypatch.setenv("PATH", path_without_ffmpeg())
    monkeypatch.delenv("IMAGEIO_FFMPEG_EXE", raising=False)
    find_ffmpeg.cache_clear()
    yield
    find_ffmpeg.cache_clear()


def test_finding_ffmpeg_runs_no_program() -> None:
    env = {k: v for k, v in os.environ.items() if k != "IMAGEIO_FFMPEG_EXE"}
    env["PATH"] = path_without_ffmpeg()
    result = json_printed_by(_LOOKUP, cwd=ROOT, env=env)
    assert result["started"] == [], "a child process ran while ffmpeg was looked up"
    assert result["found"] == imageio_ffmpeg.get_ffmpeg_exe()  # the binary imageio proves


def test_a_named_ffmpeg_that_does_not_exist_is_a_setting_to_fix(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(tmp_path / "no-such-ffmpeg"))
    with pytest.raises(FfmpegMissing) as raised:
        find_ffmpeg()
    assert isinstance(raised.value, ConfigError)  # the run stops; files stay pending
    assert str(raised.value) == (
        f"IMAGEIO_FFMPEG_EXE names {tmp_path / 'no-such-ffmpeg'}, which is not an "
        "executable file: point it at an ffmpeg binary, or unset it to use the one "
        "imageio-ffmpeg installed"
    )


def test_a_named_ffmpeg_is_used_as_named(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = imageio_ffmpeg.get_ffmpeg_exe()
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", chosen)
    assert find_ffmpeg() == chosen


def test_no_ffmpeg_anywhere_is_a_setting_to_fix(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # An imageio-ffmpeg without its binary (a platform it has none for), whose own search
    # of the system then fails as the library documents: with a RuntimeError.
    monkeypatch.setattr(ffmpeg_binary, "BUNDLED_FOLDER", tmp_path)

    def nothing_found() -> str:
        raise RuntimeError("No ffmpeg exe could be found.")

    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", nothing_found)
    with pytest.raises(FfmpegMissing) as raised:
        find_ffmpeg()
    assert str(raised.value) == (
        "no ffmpeg was found (none on PATH, none installed with imageio-ffmpeg): install "
        "ffmpeg, or set IMAGEIO_FFMPEG_EXE to an ffmpeg binary"
    )
