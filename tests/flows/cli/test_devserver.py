"""`medasr devserver` as a process, and curl as a client independent of ours."""

from __future__ import annotations

import base64
import inspect
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from config.errors import ConfigError
from devserver import DevServerConfig, build_state
from devserver.config import FAULT_NAMES
from flows.cli.devserver import config_from_options, devserver_command
from tests.servers import DEVSERVER_TOKEN, make_tone_wav_bytes

# The command as registered in flows/cli/commands.py, run by itself through typer.run
# (importing flows.cli still loads the other commands, as `medasr` does).
_RUN_COMMAND = (
    "import typer; from flows.cli.devserver import devserver_command; typer.run(devserver_command)"
)
_READY = re.compile(r"^medasr devserver listening on (http://\S+) \((.*)\)$")


@contextmanager
def devserver_process(
    *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str, int]]:
    """Start the command, yield (url, detail) from its one line and its pid, then stop it
    with Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, "-c", _RUN_COMMAND, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=Path(__file__).resolve().parents[3],
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        match = _READY.match(line)
        assert match, (line, process.stderr.read() if process.poll() is not None else "")
        yield match.group(1), match.group(2), process.pid
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def curl(url: str, *args: str) -> tuple[int, str]:
    """(HTTP status, body) of a curl call."""
    result = subprocess.run(
        ["curl", "-sS", "-w", "\n%{http_code}", *args, url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    body, _, status = result.stdout.rpartition("\n")
    return int(status), body


@pytest.fixture
def wav_file(tmp_path: Path) -> Path:
    path = tmp_path / "x.wav"
    path.write_bytes(make_tone_wav_bytes("no acute distress"))
    return path


def test_curl_transcribes_and_gets_401_without_a_header(devserver, wav_file: Path) -> None:
    url = f"{devserver.url}/voice/get-asr?language=en-IN"
    auth = f"Authorization: Bearer {DEVSERVER_TOKEN}"
    status, body = curl(url, "-F", f"file=@{wav_file}", "-H", auth)
    assert status == 200
    assert '"text":"no acute distress"' in body
    status, body = curl(url, "-F", f"file=@{wav_file}")
    assert (status, body) == (401, '{"message":"Unauthorized"}')


def test_command_prints_url_and_minted_token(tmp_path: Path, wav_file: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    with devserver_process("--port", "0", "--ledger", str(ledger)) as (url, detail, _pid):
        assert url.startswith("http://127.0.0.1:")
        token = detail.removeprefix("MEDASR_TOKEN=")
        assert token != detail
        assert token.count(".") == 2
        status, body = curl(
            f"{url}/voice/get-asr?language=kn",
            "-F",
            f"file=@{wav_file}",
            "-H",
            f"Authorization: Bearer {token}",
        )
        assert status == 200
        assert "no acute distress" in body
    assert '"status":200' in ledger.read_text()


def test_command_reads_env_and_never_prints_a_static_token(wav_file: Path) -> None:
    env = {
        "MEDASR_DEVSERVER_PORT": "0",
        "MEDASR_DEVSERVER_TOKEN": "static-secret-token",
        "MEDASR_DEVSERVER_RATE_429": "1",
        "MEDASR_DEVSERVER_RETRY_AFTER_S": "9",
    }
    with devserver_process(env=env) as (url, detail, _pid):
        assert "static-secret-token" not in detail
        status, _body = curl(
            f"{url}/voice/get-asr?language=en-IN",
            "-F",
            f"file=@{wav_file}",
            "-H",
            "Authorization: Bearer static-secret-token",
        )
        assert status == 429


def thread_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process `pid`, by thread id."""
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    spent = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except FileNotFoundError:  # the thread ended while we looked
            continue
        fields = stat.rsplit(")", 1)[1].split()
        spent[int(task.name)] = (int(fields[11]) + int(fields[12])) / ticks_per_s
    return spent


def test_only_the_requests_own_threads_decode_them() -> None:
    """The threads there before the first request (but the event loop's) stay idle while
    the tone engine decodes: BLAS's own workers spun between its small matrix products,
    a second core's worth of CPU taken from the client on the same machine."""
    wav = make_tone_wav_bytes(" ".join(["no acute distress"] * 8))
    args = ("--port", "0", "--token", DEVSERVER_TOKEN, "--engine", "default")
    with devserver_process(*args) as (url, _detail, pid):
        idle = {tid: cpu for tid, cpu in thread_cpu_s(pid).items() if tid != pid}
        if not idle:
            pytest.skip("one core: BLAS started no workers of its own")
        headers = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
            for _ in range(20):
                response = client.post(
                    "/voice/get-asr", params={"language": "en-IN"}, files={"file": wav}
                )
                assert "no acute distress" in response.json()["text"]
        after = thread_cpu_s(pid)
    spent_s = {tid: after.get(tid, cpu) - cpu for tid, cpu in idle.items()}
    assert sum(spent_s.values()) < 0.05, spent_s


def test_command_refuses_bad_options_before_listening() -> None:
    # flows/cli/commands.py main() turns this ConfigError into one line and exit code 2.
    with pytest.raises(ConfigError, match="--rate-500 must be between 0 and 1"):
        devserver_command(port=0, rate_500=2.0)


@pytest.mark.parametrize(
    ("args", "env"),
    [(["--jwe-key", "tiny-key"], {}), ([], {"MEDASR_DEVSERVER_JWE_KEY": "tiny-key"})],
    ids=["flag", "environment"],
)
def test_short_jwe_key_is_a_usage_error_naming_the_option(args, env) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "flows.cli", "devserver", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode == 2, result.stderr
    assert "--jwe-key" in result.stderr
    assert "MEDASR_DEVSERVER_JWE_KEY" in result.stderr
    assert "(got 8 characters" in result.stderr
    assert "tiny-key" not in result.stderr + result.stdout
    assert len(result.stderr.strip().splitlines()) == 1


def test_every_fault_rate_and_config_option_is_a_flag() -> None:
    flags = set(inspect.signature(devserver_command).parameters)
    assert {f"rate_{name}" for name in FAULT_NAMES if name != "ok"} <= flags
    assert {"token_ttl_s", "jwe_key", "ledger", "fault_script", "legacy_response_tag"} <= flags


def test_options_map_onto_the_config() -> None:
    config = config_from_options(
        ledger=Path("x.jsonl"), fault_script=" 502, notext ,ok", rate_504=0.25, token_ttl_s=30
    )
    assert config.ledger_path == Path("x.jsonl")
    assert config.fault_script == ("502", "notext", "ok")
    assert (config.rate_504, config.token_ttl_s) == (0.25, 30)
    assert config_from_options() == DevServerConfig()
    with pytest.raises(TypeError, match="ledger_path"):
        config_from_options(ledger_path=Path("x.jsonl"))  # the flag is --ledger


def test_token_ttl_sets_the_minted_token_lifetime() -> None:
    state = build_state(config_from_options(port=0, token_ttl_s=30))
    payload = state.tokens.token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["exp"] - claims["iat"] == pytest.approx(30, abs=1)
    with pytest.raises(ConfigError, match="--token-ttl-s must be positive"):
        config_from_options(token_ttl_s=0)


def test_a_ledger_in_a_folder_not_there_is_refused_at_start(tmp_path: Path) -> None:
    # Started anyway, every request got a 500 (the ledger written as each one arrives).
    ledger = tmp_path / "nonexist" / "dir" / "l.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "flows.cli", "devserver", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "MEDASR_DEVSERVER_LEDGER": str(ledger)},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        "medasr: configuration error: devserver: --ledger (MEDASR_DEVSERVER_LEDGER): "
        f"cannot write {ledger}: folder {ledger.parent} does not exist"
    ]
    assert "listening" not in result.stdout
