"""Which ffmpeg binary medasr runs, found without running anything.

In order: an `ffmpeg` on PATH (a system build is preferred, README), the binary
IMAGEIO_FFMPEG_EXE names, the build the imageio-ffmpeg wheel installed, and last
imageio-ffmpeg's own search (conda's, the system's). imageio-ffmpeg's `get_ffmpeg_exe()`
proves its build by running `ffmpeg -version` in medasr's process group, where a
terminal's Ctrl-C meant for the run kills it, and the library then reports no ffmpeg at
all; every ffmpeg medasr runs has a process group of its own for that reason
(tasks/audio/decoder.py). So its build is taken from the wheel's binaries folder, as
the library would find it, and the library is asked only when that folder holds none.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import imageio_ffmpeg

from config.runtime import ffmpeg_named_in_environment
from tasks.errors import FfmpegMissing

# Where the pinned imageio-ffmpeg (pyproject.toml) keeps its build: one file,
# ffmpeg-<platform>-v<version>[.exe] (tests/tasks/audio/test_ffmpeg_binary.py checks
# that the library's own lookup finds the same file).
BUNDLED_FOLDER = Path(imageio_ffmpeg.__file__).parent / "binaries"


@functools.cache
def find_ffmpeg() -> str:
    """The ffmpeg executable (see the module docstring); raises FfmpegMissing."""
    return shutil.which("ffmpeg") or _named_ffmpeg() or _bundled_ffmpeg() or _searched_ffmpeg()


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _named_ffmpeg() -> str | None:
    """IMAGEIO_FFMPEG_EXE, which imageio-ffmpeg too takes as it is; it must exist."""
    named = ffmpeg_named_in_environment()
    if not named:
        return None
    found = shutil.which(named)  # a bare name is looked up on PATH, as the library's user expects
    if found is None or not _is_executable(Path(found)):
        raise FfmpegMissing(
            f"IMAGEIO_FFMPEG_EXE names {named}, which is not an executable file: point it "
            "at an ffmpeg binary, or unset it to use the one imageio-ffmpeg installed"
        )
    return found


def _bundled_ffmpeg() -> str | None:
    """The wheel's own build, if its folder holds exactly one executable ffmpeg-*."""
    try:
        builds = [p for p in BUNDLED_FOLDER.glob("ffmpeg-*") if _is_executable(p)]
    except OSError:
        return None
    return str(builds[0]) if len(builds) == 1 else None


def _searched_ffmpeg() -> str:
    """imageio-ffmpeg's own search; its RuntimeError (nothing found) translated."""
    try:
        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except RuntimeError as exc:
        raise FfmpegMissing(
            "no ffmpeg was found (none on PATH, none installed with imageio-ffmpeg): "
            "install ffmpeg, or set IMAGEIO_FFMPEG_EXE to an ffmpeg binary"
        ) from exc
