"""Temp folders of medasr: 0700 and named after their process, files 0600, and the
leftovers of an ended process removed at start-up (never a live one's)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from storage.scratch import create_private_file, private_folder, remove_dead_leftovers


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _start_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[19])


def test_private_folder_and_file_modes_and_removal(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    os.umask(0o022)
    with private_folder("fetch") as folder:
        with create_private_file(folder / "source.mp3") as out:
            out.write(b"audio")
        assert folder.parent == tmp_path
        assert folder.name.startswith(f"medasr-{os.getpid()}-{_start_ticks(os.getpid())}-fetch-")
        assert (_mode(folder), _mode(folder / "source.mp3")) == (0o700, 0o600)
    assert list(tmp_path.iterdir()) == []


def test_leftovers_of_ended_processes_go_and_live_ones_stay(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                               capture_output=True, text=True, check=True)  # fmt: skip
        dead_pid = int(ended.stdout)
        folders = {
            "dead": tmp_path / f"medasr-{dead_pid}-1-fetch-abc",
            "reused-pid": tmp_path / f"medasr-{child.pid}-1-fetch-def",  # same pid, newer process
            "live": tmp_path / f"medasr-{child.pid}-{_start_ticks(child.pid)}-fetch-ghi",
            "mine": tmp_path / f"medasr-{os.getpid()}-{_start_ticks(os.getpid())}-fetch-jkl",
            "not-ours": tmp_path / "medasr-fetch-legacy",
        }
        for folder in folders.values():
            folder.mkdir()
            (folder / "source.wav").write_bytes(b"patient audio")
        (tmp_path / f"medasr-{dead_pid}-1-file").write_bytes(b"a file, not our folder")

        assert remove_dead_leftovers(str(tmp_path)) == 2

        left = {name for name, folder in folders.items() if folder.exists()}
        assert left == {"live", "mine", "not-ours"}
        assert (tmp_path / f"medasr-{dead_pid}-1-file").exists()
    finally:
        child.kill()
        child.wait()


def test_an_unreadable_temp_dir_is_not_an_error(tmp_path: Path) -> None:
    assert remove_dead_leftovers(str(tmp_path / "missing")) == 0
