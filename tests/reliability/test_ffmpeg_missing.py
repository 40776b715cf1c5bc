"""A host whose ffmpeg cannot be found: the run stops on a setting, and loses nothing.

A recording only an ffmpeg process decodes (a CAF) meets an IMAGEIO_FFMPEG_EXE that names
no file. That is the host's fault, not the recording's: no row may fail for it (each
would need a person to rerun it), the command exits 2 with the variable to fix, and the
same command after the fix finishes the recording.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.audio import path_without_ffmpeg
from tests.reliability.corpus import age_files
from tests.reliability.evidence import items
from tests.reliability.test_terminal_interrupt import write_tone_caf


def test_a_run_without_ffmpeg_stops_and_leaves_the_recording_pending(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str]
) -> None:
    source = tmp_path / "archive"
    write_tone_caf(source / "note.caf", "review in six weeks.")
    age_files(source)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver()
    medasr = medasr_for(server, database, PATH=path_without_ffmpeg(), **prefect_api)
    missing = str(tmp_path / "no-such-ffmpeg")

    first = medasr.run("run", str(source), "-l", "en-IN", IMAGEIO_FFMPEG_EXE=missing)

    assert first.returncode == 2, first.describe()
    assert f"IMAGEIO_FFMPEG_EXE names {missing}, which is not an executable file" in (
        first.stdout + first.stderr
    ), first.describe()
    assert "Traceback" not in first.stderr, first.describe()
    assert [row["status"] for row in items(database)] == ["pending"], first.describe()
    assert server.state.capacity.peak_in_flight == 0  # nothing was sent

    again = medasr.run("run", str(source), "-l", "en-IN")
    assert again.returncode == 0, again.describe()
    assert [row["status"] for row in items(database)] == ["done"]
