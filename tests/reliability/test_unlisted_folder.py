"""Issue 20 §1: a folder inside the source that cannot be listed is a failed row of its own.

The issue's reproduction, run as root without the capabilities that read past file modes
(`setpriv --bounding-set=-dac_override,-dac_read_search`): `s/a.wav`, `s/locked/b.wav`,
`chmod 000 s/locked`. Before: exit 0, "recordings to check 0", `status` showed nothing of
locked/. Now: a failed row (source_unreadable, the folder's path), counted in the summary
and the exit code (1), listed by `status`; once readable, the next run transcribes b.wav
and the folder's row goes.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.reliability.corpus import age_files, write_tone_wav
from tests.reliability.evidence import items
from tests.reliability.harness import Finished, Medasr

SETPRIV = shutil.which("setpriv")
pytestmark = [
    pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is not installed"),
    pytest.mark.slow,  # two runs and a status against a Prefect server: ~90 s
]


def run_without_root_powers(medasr: Medasr, *args: str) -> Finished:
    done = subprocess.run(
        [str(SETPRIV), "--bounding-set=-dac_override,-dac_read_search", *medasr.command(*args)],
        env=medasr.env,
        cwd=medasr.cwd,
        capture_output=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    return Finished(args, done.returncode, out, err, 0.0)


def test_a_folder_that_cannot_be_listed_is_failed_counted_listed_and_retried(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str], figures
) -> None:
    server = tone_devserver()
    source = tmp_path / "s"
    write_tone_wav(source / "a.wav", "first note. all well.")
    write_tone_wav(source / "locked" / "b.wav", "second note. behind a lock.")
    age_files(source)
    (source / "locked").chmod(0o000)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database_url, **prefect_api)
    try:
        first = run_without_root_powers(medasr, "run", str(source), "-l", "en-IN")
        status = run_without_root_powers(medasr, "status", "--failures", "20")
    finally:
        (source / "locked").chmod(0o755)
    assert first.returncode == 1, first.describe()
    summary = first.summary()
    assert (summary["files_unreadable"], summary["files_not_listed"]) == ("1", "0"), summary
    assert "locked" in first.stdout  # named in the recordings to check
    assert "0 not listed, 1 unreadable" in first.output  # the log says the same
    rows = {r["source_uri"]: r for r in items(database_url)}
    folder = rows[str(source / "locked")]
    assert (folder["status"], folder["error_kind"]) == ("failed", "source_unreadable")
    assert "cannot read folder" in folder["error_message"]
    assert "locked" in status.stdout, status.describe()

    second = medasr.run("run", str(source), "-l", "en-IN")

    assert second.returncode == 0, second.describe()
    rows = {r["source_uri"]: r for r in items(database_url)}
    assert str(source / "locked") not in rows  # resolved
    assert rows[str(source / "locked" / "b.wav")]["text"] == "second note. behind a lock."
    assert len(server.ledger) == 2  # a.wav once, b.wav once
    figures(
        "unlisted-folder",
        exit_codes=[first.returncode, second.returncode],
        unreadable_counted=int(summary["files_unreadable"]),
        requests=len(server.ledger),
    )
