"""The schedules that `medasr serve` registers fire on a real Prefect server with nobody
triggering them: Prefect's scheduler creates the runs, the runner started by `serve` picks
them up, and the nightly one transcribes the recordings (issue 40).

Every deployment runs on a cron of every minute; the test only watches.
"""

from __future__ import annotations

import asyncio
import io
import re
import subprocess
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

from devserver import start_devserver
from flows.deploy import (
    NIGHTLY_DEPLOYMENT,
    PURGE_DEPLOYMENT,
    RERUN_DEPLOYMENT,
    build_deployments,
)
from flows.schedule_check import check_schedules
from tests.flows.prefect_server import (
    MEDASR,
    Background,
    PrefectServer,
    clean_env,
    free_port,
    running_prefect_server,
    start_background,
    wait_until,
)
from tests.flows.test_serve import TEXTS, TOKEN, _read_items
from tests.recordings import write_tone_recordings

EVERY_MINUTE = "* * * * *"
DEPLOYMENTS = (NIGHTLY_DEPLOYMENT, RERUN_DEPLOYMENT, PURGE_DEPLOYMENT)


def _scheduled_runs(server: PrefectServer) -> dict[str, list[Any]] | None:
    """Each deployment's flow runs created by Prefect's scheduler (none by hand here)."""

    async def read(client):  # type: ignore[no-untyped-def]
        found = {}
        for name in DEPLOYMENTS:
            try:
                deployment = await client.read_deployment_by_name(name)
            except Exception:  # ObjectNotFound until serve has registered it
                return None
            runs = await client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id]))
            )
            found[name] = [run for run in runs if run.auto_scheduled]
        return found

    return server.call(read)


def _first(runs: dict[str, list[Any]] | None, predicate: Any) -> dict[str, Any] | None:
    """{deployment: its first run that satisfies `predicate`} once every deployment has one."""
    if runs is None:
        return None
    chosen = {name: next((r for r in found if predicate(r)), None) for name, found in runs.items()}
    return chosen if all(chosen.values()) else None


def _wait_for_runs(
    server: PrefectServer, predicate: Any, *, what: str, serving: Background
) -> dict[str, Any]:
    return wait_until(
        lambda: _first(_scheduled_runs(server), predicate),
        timeout_s=300,
        what=what,
        alive=[serving, server.background],
        interval_s=2.0,
    )


def _final(run: Any) -> bool:
    return run.state is not None and run.state.is_final()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_schedules_fire_without_anyone_triggering_them(
    prefect_server: PrefectServer, tmp_path: Path
) -> None:
    source = write_tone_recordings(tmp_path / "recordings", TEXTS)
    with start_devserver(token=TOKEN, port=0, engine="tone") as tone_server:
        env = clean_env(
            tmp_path / "prefect-serve",
            PREFECT_API_URL=prefect_server.api_url,
            PREFECT_RUNNER_POLL_FREQUENCY="2",
            MEDASR_BASE_URL=tone_server.url,
            MEDASR_TOKEN=TOKEN,
            MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
            MEDASR_PIPELINE__SETTLE_S="0",
        )
        args = [MEDASR, "serve", str(source), "--language", "en-IN", "--timezone", "Asia/Kolkata"]
        for option in ("--nightly-cron", "--rerun-cron", "--purge-cron"):
            args += [option, EVERY_MINUTE]
        started = time.monotonic()
        serving = start_background(args, env=env, cwd=tmp_path, log_path=tmp_path / "serve.log")
        try:
            _wait_for_runs(prefect_server, lambda r: True, what="scheduled runs", serving=serving)
            scheduled = time.monotonic()
            _wait_for_runs(
                prefect_server,
                lambda r: r.start_time is not None,
                what="scheduled runs started",
                serving=serving,
            )
            began = time.monotonic()
            finished = _wait_for_runs(
                prefect_server, _final, what="scheduled runs finished", serving=serving
            )
            done = time.monotonic()
            status = subprocess.run(
                [MEDASR, "status"], env=env, cwd=tmp_path, capture_output=True, text=True,
                timeout=120,
            )  # fmt: skip
        finally:
            serving.stop()
        statuses = tone_server.ledger.statuses()
    print(
        f"timeline from `medasr serve` start: scheduled +{scheduled - started:.0f} s, "
        f"started +{began - started:.0f} s, finished +{done - started:.0f} s"
    )
    # Said at the start: the whole log (the schedules may have fired more than once since,
    # and log() keeps only its tail).
    said = serving.log_path.read_text(errors="replace")
    assert "Prefect UI at http://127.0.0.1:" in said, serving.log()
    for name in DEPLOYMENTS:  # in the schedules' zone
        assert re.search(rf"{name} next run \d{{4}}-\d\d-\d\d \d\d:\d\d IST", said), serving.log()
    assert re.search(r"next nightly run: \d{4}-\d\d-\d\d \d\d:\d\d IST", status.stdout), (
        status.stdout + status.stderr
    )
    for name, run in finished.items():
        assert run.state.is_completed(), f"{name}: {run.state.type} {run.state.message}"
    assert _read_items(tmp_path / "medasr.db") == {
        name: ("done", text) for name, text in TEXTS.items()
    }
    assert statuses == [200] * len(TEXTS)


def test_serve_says_when_the_server_schedules_nothing(tmp_path: Path) -> None:
    """A server whose scheduler does not work: the check says so in one line, once."""
    home = tmp_path / "prefect-server"
    with running_prefect_server(home, PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED="false") as server:
        nightly, rerun = build_deployments(source=str(tmp_path), language="en-IN")
        lines = asyncio.run(_checked(server, [nightly, rerun], within_s=8.0))
    [line] = [x for x in lines if x.strip()]
    assert line.startswith("medasr serve: the Prefect server has scheduled no run of "), line
    assert f"{NIGHTLY_DEPLOYMENT}, {RERUN_DEPLOYMENT} after 8 s" in line
    assert "serving on" in line


async def _checked(server: PrefectServer, deployments: list[Any], *, within_s: float) -> list[str]:
    """What check_schedules prints for `deployments` registered on `server`."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: server.api_url}):
        ids = {f"{d.flow_name}/{d.name}": await d.aapply() for d in deployments}
        out = io.StringIO()
        with redirect_stdout(out):
            await check_schedules(ids, timezone="UTC", within_s=within_s, first_look_s=0.5)
    return out.getvalue().splitlines()


@pytest.mark.parametrize(
    ("api_url", "expected"),
    [
        pytest.param(None, None, id="no-server-named"),
        pytest.param("unreachable", "next nightly run: unknown (the Prefect server", id="down"),
    ],
)
def test_status_says_the_next_nightly_run_only_where_it_can_know(
    api_url: str | None, expected: str | None, tmp_path: Path
) -> None:
    if api_url == "unreachable":
        api_url = f"http://127.0.0.1:{free_port()}/api"  # nothing listens there
    extra = {"PREFECT_API_URL": api_url} if api_url else {}
    env = clean_env(
        tmp_path / "prefect", MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'm.db'}", **extra
    )
    status = subprocess.run(
        [MEDASR, "status"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert status.returncode == 0, status.stderr
    lines = [line for line in status.stdout.splitlines() if "next nightly run" in line]
    assert lines == ([] if expected is None else [lines[0]]), status.stdout
    if expected is not None:
        assert lines[0].startswith(expected)
