"""Patient data medasr writes into a working tree is ignored by git by default."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATIENT_DATA = [
    "medasr.db",
    "try.db",
    "try.db-wal",
    "try.db-shm",
    "try.db-journal",
    "elsewhere/deeper/trial.db",
    "transcripts/ward 7/round.txt",
    "results.jsonl",
    "results.csv",
    "transcripts/.medasr-export-abc123.tmp",
    ".demo/medasr.db",
]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("path", PATIENT_DATA)
def test_git_ignores_what_medasr_writes_in_a_checkout(path: str) -> None:
    checked = subprocess.run(
        ["git", "-C", str(REPO), "check-ignore", "--no-index", "-q", path], check=False
    )
    if checked.returncode == 128:
        pytest.skip("not a git checkout")
    assert checked.returncode == 0, f"{path} is not ignored by .gitignore"
