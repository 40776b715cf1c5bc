"""The `medasr` console script as a person or a cron job runs it: output and exit codes.

Every case is a real subprocess of `.venv/bin/medasr`. One devserver serves them all. A
case that runs a flow is not about Prefect's temporary server, so it takes `served_env`:
`env` with the worker's shared Prefect API (tests/prefect_servers.py) in place of a start.
The cases that check Prefect did not start keep `env`, whose PREFECT_HOME would show one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile

from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from tests.flows.prefect_server import MEDASR, PrefectServer, clean_env
from tests.helpers.cli import medasr, table_rows
from tests.recordings import write_tone_recordings

TOKEN = "cli-test-token"
TEXTS = {
    "ward/admission.wav": "admitted with chest pain. ecg normal.",
    "ward/round.wav": "day 2. pain settled.",
    "clinic.wav": "review in 6 weeks.",
}
COMMANDS = (
    "run",
    "rerun-failures",
    "status",
    "export",
    "deliver",
    "split",
    "devserver",
    "serve",
    "demo",
    "db",
)


@pytest.fixture(scope="module")
def service() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, engine="tone") as server:
        yield server


@pytest.fixture(scope="module")
def recordings_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tone_recordings(tmp_path_factory.mktemp("recordings"), TEXTS)


@pytest.fixture
def recordings(recordings_template: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(recordings_template, tmp_path / "recordings"))


@pytest.fixture
def env(service: RunningDevServer, tmp_path: Path) -> dict[str, str]:
    service.ledger.clear()
    return clean_env(
        tmp_path / "prefect",
        MEDASR_BASE_URL=service.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
    )


@pytest.fixture
def served_env(env: dict[str, str], prefect_api: dict[str, str]) -> dict[str, str]:
    """`env` pointed at the worker's shared Prefect API: a run starts no Prefect of its own."""
    return env | prefect_api


def flow_runs(server: PrefectServer) -> int:
    """How many flow runs the shared Prefect API holds."""
    return server.call(lambda client: client.count_flow_runs())


def prefect_started(env: dict[str, str]) -> bool:
    """Whether a command started Prefect (its ephemeral API creates this database)."""
    return (Path(env["PREFECT_HOME"]) / "prefect.db").exists()


def test_help_lists_every_command(env: dict[str, str], tmp_path: Path) -> None:
    result = medasr("--help", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listed = set(re.findall(r"^\W*([a-z][a-z-]+)\s{2,}\S", result.stdout, flags=re.MULTILINE))
    assert set(COMMANDS) <= listed, result.stdout


@pytest.mark.parametrize(
    ("variables", "args", "fragment"),
    [
        pytest.param(
            {"MEDASR_CONCURRENCY": "many"}, [], "MEDASR_CONCURRENCY", id="concurrency-nan"
        ),
        pytest.param({"MEDASR_CONCURRENCY": "0"}, [], "MEDASR_CONCURRENCY", id="concurrency-zero"),
        pytest.param({}, ["--language", "xx-XX"], "unsupported language 'xx-XX'", id="language"),
        pytest.param({"MEDASR_ENCRYPT": "true"}, [], "MEDASR_JWE_KEY", id="encrypt-no-key"),
        pytest.param(
            {"MEDASR_BASE_URL": "http://127.0.0.1:99999"}, [], "MEDASR_BASE_URL", id="port-99999"
        ),
        pytest.param(
            {"MEDASR_DATABASE_URL": "sqlite:////nonexistent/dir/m.db"},
            [],
            "MEDASR_DATABASE_URL",
            id="database-folder-missing",
        ),
        pytest.param(
            {"MEDASR_ENCRYPT": "true"}, ["--dry-run"], "MEDASR_JWE_KEY", id="encrypt-no-key-dry"
        ),
    ],
)
def test_configuration_errors_exit_2_with_one_line(
    variables: dict[str, str],
    args: list[str],
    fragment: str,
    env: dict[str, str],
    recordings: Path,
    service: RunningDevServer,
    tmp_path: Path,
) -> None:
    language = [] if "--language" in args else ["--language", "en-IN"]
    result = medasr("run", str(recordings), *language, *args, env=env | variables, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("medasr: configuration error:")
    assert fragment in lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert len(service.ledger) == 0


def test_dry_run_prints_the_plan_and_sends_nothing(
    env: dict[str, str], recordings: Path, service: RunningDevServer, tmp_path: Path
) -> None:
    result = medasr(
        "run", str(recordings), "--language", "en-IN", "--dry-run", env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    plan = table_rows(result.stdout)
    assert plan["files"] == "3"
    assert plan["chunks"] == plan["requests"] == "3"
    assert 0 < float(plan["audio hours"]) < 0.01
    assert plan["sent"] == "0"
    assert "nothing sent" in result.stdout
    assert len(service.ledger) == 0


def test_run_prints_plain_lines_and_a_summary(
    served_env: dict[str, str], recordings: Path, service: RunningDevServer, tmp_path: Path
) -> None:
    result = medasr("run", str(recordings), "--language", "en-IN", env=served_env, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "\x1b[" not in out, "escape codes without a terminal"
    assert "\r" not in out, "carriage returns without a terminal"
    assert "medasr: 3 files to process" in out
    progress = re.findall(r"^\[(\d)/3\] done: (\S+)", out, flags=re.M)
    assert sorted(n for n, _ in progress) == ["1", "2", "3"]
    assert {name for _, name in progress} == set(TEXTS)  # the path in the source, not the URI
    summary = table_rows(out)
    assert (summary["files done"], summary["files failed"], summary["requests"]) == ("3", "0", "3")
    assert f"store: {tmp_path / 'medasr.db'}" in out.splitlines()
    assert service.ledger.statuses() == [200, 200, 200]
    assert not any(text in out + result.stderr for text in TEXTS.values()), "transcript printed"


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
@pytest.mark.parametrize("missing", ["nonexistent", "file://{tmp}/gone"], ids=["path", "url"])
def test_missing_source_exits_2_before_prefect_starts(
    dry_run: list[str], missing: str, env: dict[str, str], tmp_path: Path
) -> None:
    source = str(tmp_path / missing) if "://" not in missing else missing.format(tmp=tmp_path)
    result = medasr("run", source, "--language", "en-IN", *dry_run, env=env, cwd=tmp_path)

    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("medasr: usage error: source not found:"), lines[0]
    assert str(tmp_path) in lines[0]
    assert not prefect_started(env), "Prefect started before the source was checked"


def test_a_file_that_is_neither_folder_nor_file_exits_2(
    env: dict[str, str], tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    result = medasr("run", str(fifo), "--language", "en-IN", env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "neither a folder nor a file" in result.stderr
    assert not prefect_started(env)


@pytest.mark.parametrize("command", ["run", "rerun-failures"])
@pytest.mark.parametrize(
    ("variables", "fragment"),
    [
        pytest.param(
            {"MEDASR_BASE_URL": "http://192.0.2.10:8080"}, "MEDASR_BASE_URL", id="insecure-http"
        ),
        pytest.param({"MEDASR_CA_BUNDLE": "/no/such/ca.pem"}, "MEDASR_CA_BUNDLE", id="ca-bundle"),
    ],
)
def test_bad_service_settings_exit_2_before_prefect_starts(
    command: str,
    variables: dict[str, str],
    fragment: str,
    env: dict[str, str],
    recordings: Path,
    tmp_path: Path,
) -> None:
    args = ["run", str(recordings), "--language", "en-IN"] if command == "run" else [command]
    result = medasr(*args, env=env | variables, cwd=tmp_path)

    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("medasr: configuration error:")
    assert fragment in lines[0]
    assert not prefect_started(env), "Prefect started before the settings were checked"


def test_rejected_token_exits_3_and_leaves_files_pending(
    served_env: dict[str, str],
    shared_prefect_server: PrefectServer,
    recordings: Path,
    service: RunningDevServer,
    tmp_path: Path,
) -> None:
    bad = served_env | {"MEDASR_TOKEN": "not-the-token"}
    runs_before = flow_runs(shared_prefect_server)
    result = medasr("run", str(recordings), "--language", "en-IN", env=bad, cwd=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    # Stopped inside its flow run (after Prefect), not by a check before it.
    assert flow_runs(shared_prefect_server) == runs_before + 1
    assert "Traceback" not in result.stdout + result.stderr
    assert "not-the-token" not in result.stdout + result.stderr
    # The summary table first (stdout), then one line naming the setting to fix (stderr).
    summary = table_rows(result.stdout)
    assert summary["credentials rejected"] == "yes", result.stdout
    assert summary["files done"] == "0"
    assert summary["exit code"] == "3"
    ours = [line for line in result.stderr.splitlines() if line.startswith("medasr:")]
    assert len(ours) == 1, result.stderr
    assert ours[0].startswith("medasr: stopped: credentials rejected:")
    assert "MEDASR_TOKEN" in ours[0]
    assert set(service.ledger.statuses()) == {403}
    status = medasr("status", env=served_env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "en-IN\tpending\t3\t" in status.stdout, status.stdout


def test_a_reader_that_leaves_early_costs_no_file(
    served_env: dict[str, str], recordings: Path, tmp_path: Path
) -> None:
    # `medasr run ... | head -1`: stdout closes after the first line.
    proc = start_run(recordings, env=served_env, cwd=tmp_path)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)

    assert "Traceback" not in stderr
    out = tmp_path / "rows.jsonl"
    exported = medasr(
        "export", "--format", "jsonl", "--out", str(out), env=served_env, cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(row["status"] for row in rows) == ["done"] * len(TEXTS)


def test_a_reader_gone_before_the_first_line_costs_no_file(
    served_env: dict[str, str], recordings: Path, tmp_path: Path
) -> None:
    # `medasr run ... | true`: the reader has left before medasr writes anything, so every
    # write to stdout meets a closed pipe; the run still finishes and exits per its result.
    proc = start_run(recordings, env=served_env, cwd=tmp_path)
    assert proc.stdout is not None
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)

    assert "Traceback" not in stderr
    assert export_statuses(served_env, tmp_path) == ["done"] * len(TEXTS)
    assert proc.returncode == 0, stderr


def test_ctrl_c_finishes_what_is_in_flight_and_gives_the_rest_back(
    served_env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(12):
        text = f"note {i}. stable."
        soundfile.write(folder / f"n{i:02d}.wav", encode_tone_dictation(text), 16000)
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=300) as slow:
        run_env = served_env | {"MEDASR_BASE_URL": slow.url, "MEDASR_CONCURRENCY": "1"}
        proc = start_run(folder, env=run_env, cwd=tmp_path)
        assert proc.stdout is not None
        while not proc.stdout.readline().startswith("[1/"):  # one file is done
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)

        assert proc.returncode == 130, err
        assert "Traceback" not in out + err
        assert "interrupted" in err
        statuses = export_statuses(run_env, tmp_path)
        assert set(statuses) <= {"done", "pending"}  # nothing failed, nothing left leased
        assert 0 < statuses.count("done") < 12

        again = medasr("run", str(folder), "--language", "en-IN", env=run_env, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert export_statuses(run_env, tmp_path) == ["done"] * 12


def export_statuses(env: dict[str, str], cwd: Path) -> list[str]:
    out = cwd / "statuses.jsonl"
    exported = medasr("export", "--format", "jsonl", "--out", str(out), env=env, cwd=cwd)
    assert exported.returncode == 0, exported.stderr
    return sorted(json.loads(line)["status"] for line in out.read_text().splitlines())


def start_run(source: Path, *, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """`medasr run SOURCE --language en-IN` in the background, its output on pipes."""
    return subprocess.Popen(
        [MEDASR, "run", str(source), "--language", "en-IN"],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_without_a_terminal_each_failure_is_printed_once_as_a_warning(
    served_env: dict[str, str], recordings: Path, service: RunningDevServer, tmp_path: Path
) -> None:
    """A night operator reads stdout and stderr of a cron job: one line per failed or
    silent recording, with its reason, and the log records of both at WARNING."""
    (recordings / "broken.mp3").write_bytes(b"not audio at all" * 64)
    soundfile.write(recordings / "quiet.wav", np.zeros(16000 * 2, dtype=np.int16), 16000)
    result = medasr("run", str(recordings), "--language", "en-IN", env=served_env, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    both = (result.stdout + result.stderr).splitlines()
    for name, outcome in (("broken.mp3", "failed"), ("quiet.wav", "skipped")):
        # The recordings to check after the summary table are indented: not counted.
        told = [ln for ln in both if name in ln and outcome in ln and not ln.startswith(" ")]
        assert len(told) == 1, "\n".join(told)
        assert told[0].startswith("["), told  # the per-file line, with its reason
        assert told[0].count(": ") >= 2, told  # "[n/N] outcome (kind): name (s): reason"
    # Recordings that failed are the run's result, told by the summary: not a program error.
    finished = [ln for ln in both if "Finished in state Failed" in ln]
    assert len(finished) == 1, both
    assert "ERROR" not in finished[0], finished


def test_quiet_run_logs_a_failed_and_a_silent_file_at_warning(
    served_env: dict[str, str], service: RunningDevServer, tmp_path: Path
) -> None:
    """Without per-file lines the log tells them, at one level: both need a person."""
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "broken.mp3").write_bytes(b"not audio at all" * 64)
    soundfile.write(folder / "quiet.wav", np.zeros(16000 * 2, dtype=np.int16), 16000)
    result = medasr("run", str(folder), "--language", "en-IN", "-q", env=served_env, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    both = result.stdout + result.stderr
    assert re.search(r"WARNING +\| medasr\.transcribe - broken\.mp3 failed \(", both), both
    assert re.search(r"WARNING +\| medasr\.transcribe - quiet\.wav skipped \(", both), both
