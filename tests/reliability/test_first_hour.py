"""A new user's first hour, checked from outside: the `medasr` command as a subprocess.

A missing token is a configuration error before anything starts; a run or rerun with
nothing to claim says so without starting Prefect; no link to a temporary server that is
gone when the command ends; no telemetry notice (medasr's processes send nothing).
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
from pathlib import Path

import pytest

from tests.recordings import write_tone_wav
from tests.reliability.corpus import age_files
from tests.reliability.harness import Medasr


def without_token(medasr: Medasr) -> dict[str, str]:
    return {k: v for k, v in medasr.env.items() if k != "MEDASR_TOKEN"}


def run_without_token(medasr: Medasr, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        medasr.command(*args),
        env=without_token(medasr),
        cwd=medasr.cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "args",
    [("run", "SOURCE", "-l", "en-IN"), ("rerun-failures",), ("deliver",)],
    ids=["run", "rerun-failures", "deliver"],
)
def test_a_missing_token_is_a_configuration_error_before_anything_starts(
    tmp_path: Path, tone_devserver, medasr_for, args: tuple[str, ...]
) -> None:
    source = tmp_path / "archive"
    write_tone_wav(source / "a.wav", "case one. stable.")
    age_files(source)
    medasr = medasr_for(tone_devserver(), f"sqlite:///{tmp_path / 'medasr.db'}")
    assert medasr.run("db", "upgrade").returncode == 0

    done = run_without_token(medasr, *(str(source) if a == "SOURCE" else a for a in args))

    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    assert "MEDASR_TOKEN" in done.stderr
    assert "configuration error" in done.stderr
    assert "credentials rejected" not in done.stdout + done.stderr
    assert "Beginning flow run" not in done.stdout + done.stderr  # Prefect never started


def test_fhir_delivery_without_its_token_is_a_configuration_error(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    medasr = medasr_for(tone_devserver(), f"sqlite:///{tmp_path / 'medasr.db'}")
    assert medasr.run("db", "upgrade").returncode == 0
    done = medasr.run("deliver", "--to", "fhir+http://127.0.0.1:9/fhir")
    assert done.returncode == 2, done.describe()
    assert "MEDASR_FHIR_TOKEN" in done.stderr, done.describe()


@pytest.mark.slow
def test_nothing_to_do_says_so_without_starting_prefect(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    source = tmp_path / "archive"
    write_tone_wav(source / "a.wav", "case one. stable.")
    (source / "notes.txt").write_text("not audio")
    age_files(source)
    database = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver()
    first = medasr_for(server, database, **prefect_api).run("run", str(source), "-l", "en-IN")
    assert first.returncode == 0, first.describe()

    # No PREFECT_API_URL: Prefect's temporary server would be started and waited for.
    medasr = medasr_for(server, database)
    again = medasr.run("run", str(source), "-l", "en-IN")
    rerun = medasr.run("rerun-failures")

    for done in (again, rerun):
        assert done.returncode == 0, done.describe()
        assert "nothing to do" in done.stdout, done.describe()
        assert "Beginning flow run" not in done.output, done.describe()
        assert "View at" not in done.output, done.describe()
    assert again.summary()["not_audio_ignored"] == "1", again.describe()


@pytest.mark.slow
def test_no_link_to_a_temporary_server_and_no_telemetry_notice(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    """In a terminal (a pseudo-terminal here), a first run ever, with Prefect's temporary
    server: Prefect would print its telemetry notice to a new user in a terminal."""
    source = tmp_path / "archive"
    write_tone_wav(source / "a.wav", "case one. stable.")
    age_files(source)
    medasr = medasr_for(tone_devserver(), f"sqlite:///{tmp_path / 'medasr.db'}")
    env = {k: v for k, v in medasr.env.items() if k not in ("CI", "DO_NOT_TRACK")}
    env["PREFECT_HOME"] = str(tmp_path / "new-user-prefect-home")  # a first run ever

    output, returncode = run_in_terminal(
        medasr.command("run", str(source), "-l", "en-IN"), env=env, cwd=medasr.cwd
    )

    tail = output[-3000:]
    assert returncode == 0, tail
    assert "Beginning flow run" in output  # the flow ran, against the temporary server
    assert "View at" not in output, tail
    assert "anonymous usage data" not in output, tail


def run_in_terminal(command: list[str], *, env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """Run `command` with a pseudo-terminal as stdin, stdout and stderr; all it printed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdin=follower, stdout=follower, stderr=follower,
        start_new_session=True,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 600)
        if not ready:
            process.kill()
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: every process that held it has ended
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace"), process.wait(timeout=60)


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_an_s3_source_without_credentials_is_a_usage_error(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api, dry_run: bool
) -> None:
    medasr = medasr_for(tone_devserver(), f"sqlite:///{tmp_path / 'medasr.db'}", **prefect_api)
    no_credentials = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # never reached: no credentials to sign with
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
    }
    medasr.env = {k: v for k, v in medasr.env.items() if not k.startswith("AWS_")}
    args = ["run", "s3://bucket/inbox", "-l", "en-IN", *(["--dry-run"] if dry_run else [])]

    done = medasr.run(*args, **no_credentials)

    assert done.returncode == 2, done.describe()
    assert "no usable credentials" in done.stderr, done.describe()


def test_a_source_that_cannot_be_listed_ends_before_prefect_with_one_line(
    tmp_path: Path, tone_devserver, medasr_for
) -> None:
    # The temporary server (no PREFECT_API_URL): the listing fails while it starts.
    medasr = medasr_for(tone_devserver(), f"sqlite:///{tmp_path / 'medasr.db'}")
    medasr.env = {k: v for k, v in medasr.env.items() if not k.startswith("AWS_")}

    done = medasr.run(
        "run",
        "s3://bucket/inbox",
        "-l",
        "en-IN",
        AWS_ENDPOINT_URL="http://127.0.0.1:9",
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
    )

    assert done.returncode == 2, done.describe()
    assert "Flow run" not in done.output, done.describe()  # no flow, no ERROR lines
    said = [line for line in done.stderr.splitlines() if line.startswith("medasr: usage error")]
    assert len(said) == 1, done.describe()
    assert "no usable credentials" in said[0]
    assert "Prefect was not started" in said[0]
