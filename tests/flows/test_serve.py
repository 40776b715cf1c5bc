"""`medasr serve`: refuses what cannot work, and against a real Prefect server registers both
scheduled deployments and runs the nightly one end to end."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import create_engine, select

from config.errors import ConfigError
from devserver import RunningDevServer, start_devserver
from flows.deploy import (
    NIGHTLY_CRON,
    NIGHTLY_DEPLOYMENT,
    RERUN_CRON,
    RERUN_DEPLOYMENT,
    build_deployments,
)
from storage.models import Item
from tests.flows.prefect_server import (
    MEDASR,
    REPO,
    PrefectServer,
    clean_env,
    flow_run_final_state,
    free_port,
    start_background,
    wait_until,
)
from tests.recordings import write_tone_recordings

TOKEN = "serve-test-token"
TEXTS = {
    "a.wav": "patient seen in clinic. plan reviewed.",
    "b.wav": "chest clear. no new symptoms.",
    "sub/c.wav": "discharge summary sent to gp.",
}


def _serve(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEDASR, "serve", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(
            ["--nightly-cron", "61 1 * * *"], "--nightly-cron '61 1 * * *'", id="bad-nightly"
        ),
        pytest.param(["--rerun-cron", "0 1 * *"], "--rerun-cron '0 1 * *'", id="four-fields"),
        pytest.param(["--timezone", "Mars/Base"], "--timezone 'Mars/Base'", id="bad-zone"),
        pytest.param(["--language", "xx-XX"], "unsupported language 'xx-XX'", id="bad-language"),
    ],
)
def test_build_deployments_refuses_bad_schedule(args: list[str], fragment: str) -> None:
    options = dict(zip(args[::2], args[1::2], strict=True))
    with pytest.raises(ConfigError, match=fragment.replace("*", r"\*")):
        build_deployments(
            source="/archive",
            language=options.get("--language", "en-IN"),
            nightly_cron=options.get("--nightly-cron", NIGHTLY_CRON),
            rerun_cron=options.get("--rerun-cron", RERUN_CRON),
            timezone=options.get("--timezone", "UTC"),
        )


def test_build_deployments_defaults() -> None:
    nightly, rerun = build_deployments(source="/archive", language="en-IN")
    assert [(d.flow_name, d.name) for d in (nightly, rerun)] == [
        tuple(NIGHTLY_DEPLOYMENT.split("/")),
        tuple(RERUN_DEPLOYMENT.split("/")),
    ]
    assert [(s.schedule.cron, s.schedule.timezone) for s in nightly.schedules or []] == [
        ("0 1 * * *", "UTC")
    ]
    assert [(s.schedule.cron, s.schedule.timezone) for s in rerun.schedules or []] == [
        ("0 */6 * * *", "UTC")
    ]
    assert nightly.parameters == {"source": "/archive", "language": "en-IN"}
    assert rerun.parameters == {"language": "en-IN"}


@pytest.mark.parametrize(
    ("args", "api_url", "fragment"),
    [
        pytest.param([], None, "`prefect server start`", id="ephemeral"),
        pytest.param([], "unreachable", "no Prefect server answers", id="unreachable"),
        pytest.param(["--nightly-cron", "0 25 * * *"], None, "--nightly-cron", id="bad-cron"),
        pytest.param(["--timezone", "Nowhere"], None, "--timezone", id="bad-zone"),
    ],
)
def test_serve_refuses_with_exit_2_and_one_line(
    args: list[str], api_url: str | None, fragment: str, tmp_path: Path
) -> None:
    if api_url == "unreachable":
        api_url = f"http://127.0.0.1:{free_port()}/api"  # nothing listens there
    extra = {"PREFECT_API_URL": api_url} if api_url else {}
    env = clean_env(tmp_path / "prefect", **extra)
    result = _serve(str(tmp_path), "--language", "en-IN", *args, env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    if not args and api_url is None:
        assert "PREFECT_API_URL" in lines[0]


@pytest.fixture
def tone_server() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, engine="tone") as server:
        yield server


def _deployment_schedules(server: PrefectServer) -> dict[str, list[tuple[str, str, bool]]] | None:
    async def read(client):  # type: ignore[no-untyped-def]
        found = {}
        for name in (NIGHTLY_DEPLOYMENT, RERUN_DEPLOYMENT):
            try:
                deployment = await client.read_deployment_by_name(name)
            except Exception:  # ObjectNotFound until serve has registered it
                return None
            found[name] = [
                (s.schedule.cron, s.schedule.timezone, s.active) for s in deployment.schedules
            ]
        return found

    return server.call(read)


def _paused(server: PrefectServer) -> dict[str, bool]:
    async def read(client):  # type: ignore[no-untyped-def]
        return {
            name: (await client.read_deployment_by_name(name)).paused
            for name in (NIGHTLY_DEPLOYMENT, RERUN_DEPLOYMENT)
        }

    return server.call(read)


def _polled(server: PrefectServer) -> bool:
    async def read(client):  # type: ignore[no-untyped-def]
        deployment = await client.read_deployment_by_name(NIGHTLY_DEPLOYMENT)
        return str(deployment.status).upper().endswith("READY")

    return bool(server.call(read))


def _start_nightly_run(server: PrefectServer):  # type: ignore[no-untyped-def]
    async def trigger(client):  # type: ignore[no-untyped-def]
        deployment = await client.read_deployment_by_name(NIGHTLY_DEPLOYMENT)
        run = await client.create_flow_run_from_deployment(deployment.id)
        return run.id

    return server.call(trigger)


def _read_items(db_path: Path) -> dict[str, tuple[str, str | None]]:
    engine = create_engine(f"sqlite:///{db_path}")
    try:
        with engine.connect() as connection:
            rows = connection.execute(select(Item.source_uri, Item.status, Item.text)).all()
    finally:
        engine.dispose()
    return {uri.rsplit("recordings/", 1)[1]: (status, text) for uri, status, text in rows}


@pytest.mark.slow
def test_serve_registers_schedules_and_runs_nightly_deployment(
    prefect_server: PrefectServer, tone_server: RunningDevServer, tmp_path: Path
) -> None:
    source = tmp_path / "recordings"
    write_tone_recordings(source, TEXTS)
    env = clean_env(
        tmp_path / "prefect-serve",
        PREFECT_API_URL=prefect_server.api_url,
        PREFECT_RUNNER_POLL_FREQUENCY="1",
        MEDASR_BASE_URL=tone_server.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
    )
    args = [MEDASR, "serve", str(source), "--language", "en-IN", "--timezone", "Asia/Kolkata"]
    serving = start_background(args, env=env, cwd=tmp_path, log_path=tmp_path / "serve.log")
    try:
        schedules = wait_until(
            lambda: _deployment_schedules(prefect_server),
            timeout_s=60,
            what="both deployments",
            alive=[serving, prefect_server.background],
        )
        assert schedules == {
            NIGHTLY_DEPLOYMENT: [("0 1 * * *", "Asia/Kolkata", True)],
            RERUN_DEPLOYMENT: [("0 */6 * * *", "Asia/Kolkata", True)],
        }
        flow_run_id = _start_nightly_run(prefect_server)
        state = flow_run_final_state(prefect_server, flow_run_id, timeout_s=120, alive=[serving])
        assert state.is_completed(), f"{state.type}: {state.message}\n{serving.log()}"
    finally:
        serving.stop()
    assert _read_items(tmp_path / "medasr.db") == {
        name: ("done", text) for name, text in TEXTS.items()
    }
    assert tone_server.ledger.statuses() == [200] * len(TEXTS)
    _assert_restart_resumes_schedules(prefect_server, args, env=env, cwd=tmp_path)


def _assert_restart_resumes_schedules(
    server: PrefectServer, args: list[str], *, env: dict[str, str], cwd: Path
) -> None:
    """Prefect's runner pauses served schedules when it stops (not reliably: its SIGTERM
    path races); whatever state they were left in, a restart must resume them."""

    async def pause_both(client):  # type: ignore[no-untyped-def]
        for name in (NIGHTLY_DEPLOYMENT, RERUN_DEPLOYMENT):
            await client.pause_deployment((await client.read_deployment_by_name(name)).id)

    server.call(pause_both)
    assert all(_paused(server).values())
    again = start_background(args, env=env, cwd=cwd, log_path=cwd / "serve2.log")
    try:
        wait_until(
            lambda: ("being served" in again.log() and not any(_paused(server).values())) or None,
            timeout_s=60,
            what="schedules resumed",
            alive=[again],
        )
    finally:
        again.stop()


def test_prefect_yaml_deployments_are_named_apart_from_serves() -> None:
    """`prefect deploy --all` must not replace what `medasr serve` registered (its
    schedule's time zone, its source): same flow, other deployment names."""
    declared = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    from_yaml = {(d["entrypoint"].rsplit(":", 1)[1], d["name"]) for d in declared}
    served = build_deployments(source="/archive", language="en-IN", purge_cron="30 3 * * 0")
    by_serve = {(d.flow_name.replace("-", "_"), d.name) for d in served}
    assert {name for _, name in from_yaml} & {name for _, name in by_serve} == set()
    assert len(from_yaml) == len(by_serve) == 3


@pytest.mark.slow
def test_serve_stops_on_sigterm_without_a_warning(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    env = clean_env(
        tmp_path / "prefect-serve",
        PREFECT_API_URL=prefect_server.api_url,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
    )
    args = [MEDASR, "serve", str(tmp_path), "--language", "en-IN"]
    serving = start_background(args, env=env, cwd=tmp_path, log_path=tmp_path / "serve.log")
    try:
        wait_until(  # polled by the running runner: its own SIGTERM handler is in place
            lambda: _deployment_schedules(prefect_server) and _polled(prefect_server),
            timeout_s=60,
            what="both deployments polled",
            alive=[serving, prefect_server.background],
        )
        serving.process.send_signal(signal.SIGTERM)  # as systemd or `kill` stops it
        code = serving.process.wait(timeout=60)
    finally:
        serving.stop()
    assert code == 0, serving.log()
    assert "never awaited" not in serving.log()
    assert "Traceback" not in serving.log()
