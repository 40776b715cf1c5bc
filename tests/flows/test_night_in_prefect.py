"""The night as Prefect shows it: `medasr run` against a real `prefect server start`, read
back through the Prefect API only (state, its event, logs, artifacts, task run names).

A good recording, one held for review (a decoder loop) and one that is not audio: the
flow run ends Failed with a message counting them, its logs name the failed file by its
path in the source (never a transcript), the night's markdown artifact has a row for it
with its kind and whether a rerun helps, and task runs are named by batch and size.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.client.schemas.sorting import FlowRunSort

from devserver import RunningDevServer, start_devserver
from tests.flows.prefect_server import MEDASR, PrefectServer, clean_env, wait_until
from tests.recordings import write_tone_recordings

TOKEN = "night-test-token"
GOOD = "patient stable overnight. review in clinic in six weeks."
LOOP = "again again again again again again again again again."  # held: repetition
BAD = "ward 7/corrupt.mp3"


@pytest.fixture
def tone_service() -> Any:
    with start_devserver(token=TOKEN, port=0, engine="tone") as server:
        yield server


def _medasr_run(tmp_path: Path, server: PrefectServer, service: RunningDevServer, root: Path):  # type: ignore[no-untyped-def]
    env = clean_env(
        tmp_path / "prefect-client",
        PREFECT_API_URL=server.api_url,
        MEDASR_BASE_URL=service.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
    )
    return subprocess.run(
        [MEDASR, "run", str(root), "--language", "en-IN", "--quiet"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _latest_flow_run(server: PrefectServer) -> Any:
    async def read(client: Any) -> Any:
        runs = await client.read_flow_runs(sort=FlowRunSort.START_TIME_DESC, limit=1)
        return runs[0]

    return server.call(read)


def _logs(server: PrefectServer, flow_run_id: Any) -> list[str]:
    async def read(client: Any) -> list[str]:
        found = await client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])), limit=200
        )
        return [log.message for log in found]

    return server.call(read)


def _night_artifact(server: PrefectServer, flow_run_id: Any) -> Any:
    async def read(client: Any) -> Any:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["medasr-night-en-in"])),
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
        )
        return found[0] if found else None

    return server.call(read)


def _task_run_names(server: PrefectServer, flow_run_id: Any) -> list[str]:
    async def read(client: Any) -> list[str]:
        runs = await client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
        return sorted(run.name for run in runs)

    return server.call(read)


def _state_events(server: PrefectServer, flow_run_id: Any) -> list[tuple[str, str]] | None:
    """(event name, state message) of the flow run's final-state events, once there."""
    body = {
        "filter": {
            "any_resource": {"id": [f"prefect.flow-run.{flow_run_id}"]},
            "event": {"prefix": ["prefect.flow-run."]},
            "occurred": {"since": "2000-01-01T00:00:00Z"},
        },
        "limit": 50,
    }
    answer = httpx.post(f"{server.api_url}/events/filter", json=body, timeout=10.0)
    answer.raise_for_status()
    events = [
        (e["event"], (e.get("payload") or {}).get("validated_state", {}).get("message") or "")
        for e in answer.json()["events"]
    ]
    finals = [
        e for e in events if e[0] in ("prefect.flow-run.Failed", "prefect.flow-run.Completed")
    ]
    return finals or None


def _row_of(markdown: str, recording: str) -> list[str]:
    for line in markdown.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if cells and cells[0] == recording:
            return cells
    raise AssertionError(f"no row for {recording!r} in:\n{markdown}")


@pytest.mark.slow
def test_a_night_with_a_failure_and_a_hold_is_failed_and_says_which_files_and_why(
    prefect_server: PrefectServer, tone_service: RunningDevServer, tmp_path: Path
) -> None:
    root = write_tone_recordings(tmp_path / "recordings", {"good.wav": GOOD, "loop.wav": LOOP})
    (root / "ward 7").mkdir()
    (root / BAD).write_bytes(b"ID3\x03\x00\x00\x00" + bytes(range(256)) * 8)

    done = _medasr_run(tmp_path, prefect_server, tone_service, root)

    assert done.returncode == 1, done.stderr
    flow_run = _latest_flow_run(prefect_server)
    today = datetime.now(UTC).date().isoformat()
    assert flow_run.name == f"backlog-en-IN-{today}"
    assert {"en-IN", "source:recordings"} <= set(flow_run.tags)
    assert flow_run.parameters == {}  # no absolute path, no secret
    assert (flow_run.state.type.value, flow_run.state.name) == ("FAILED", "Failed")
    assert flow_run.state.message == "1 failed, 1 held for review; 1 done"
    events = wait_until(
        lambda: _state_events(prefect_server, flow_run.id), timeout_s=60, what="the state event"
    )
    assert events == [("prefect.flow-run.Failed", "1 failed, 1 held for review; 1 done")]

    logs = wait_until(
        lambda: (
            (
                (lines := _logs(prefect_server, flow_run.id))
                and any(BAD in line for line in lines)
                and lines
            )
            or None
        ),
        timeout_s=60,
        what="medasr's lines in the run's logs",
    )
    failed = [line for line in logs if BAD in line]
    assert any("corrupt_audio" in line for line in failed), failed
    assert not any(str(root) in line for line in logs)  # relative to the source only
    joined = "\n".join(logs)
    assert "patient stable" not in joined
    assert "again again" not in joined
    assert TOKEN not in joined

    artifact = _night_artifact(prefect_server, flow_run.id)
    assert artifact is not None
    assert artifact.type == "markdown"
    assert "Audio hours transcribed" in artifact.data
    assert "Recordings to check" in artifact.data
    assert _row_of(artifact.data, BAD)[1:4] == ["failed", "corrupt_audio", "no"]
    assert "medasr rerun-failures --include-permanent" in _row_of(artifact.data, BAD)[5]
    held = _row_of(artifact.data, "loop.wav")
    assert held[1:4] == ["needs_review", "needs_review", "no"]
    assert "medasr review --accept" in held[5]
    assert "again" not in artifact.data
    assert "patient stable" not in artifact.data
    assert artifact.description.startswith(f"en-IN · recordings · {today}: 1 failed")

    assert _task_run_names(prefect_server, flow_run.id) == [
        "batch 1 (3 files)",
        "expected-files",  # `medasr run` listed the source while Prefect started: no discover
        "finish-run",
        "start-run",
    ]

    print(  # the API readings, for the record
        f"\nstate: {flow_run.state.type.value} {flow_run.state.name!r} {flow_run.state.message!r}"
        f"\nevents: {events}\nname: {flow_run.name} tags: {sorted(flow_run.tags)}"
        f"\nlog lines naming {BAD}: {failed}\nlog lines in all: {len(logs)}"
        f"\nrow: {_row_of(artifact.data, BAD)}\nrow: {held}"
        f"\ndescription: {artifact.description}"
        f"\ntask runs: {_task_run_names(prefect_server, flow_run.id)}"
    )

    # The next night has nothing new: it is Completed, and last night's problems stay
    # in its artifact until they are resolved.
    again = _medasr_run(tmp_path, prefect_server, tone_service, root)
    assert again.returncode == 0, again.stderr
    second = _latest_flow_run(prefect_server)
    assert second.id != flow_run.id
    assert (second.state.type.value, second.state.message) == ("COMPLETED", "0 done")
    later = _night_artifact(prefect_server, second.id)
    assert _row_of(later.data, BAD)[1] == "failed"
    assert _row_of(later.data, "loop.wav")[1] == "needs_review"
    assert later.key == artifact.key
    assert later.description != artifact.description
