"""The per-run audio cap (`--max-audio-hours`) and the spend estimate, against the
devserver over a socket: what reached it (its ledger) is what the cap and the bill see."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterKey,
    FlowRunFilter,
    FlowRunFilterId,
)
from typer.testing import CliRunner

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer
from devserver.ledger import LedgerEntry
from devserver.tone import encode_tone_dictation
from flows.backlog import transcribe_backlog
from flows.cli import app
from flows.reporting.states import summary_from
from storage import open_store
from storage.records import RunRecord
from tasks.audio import WAV_HEADER_BYTES
from tests.helpers.cli import table_rows
from tests.helpers.flows import settings_for

# Six recordings, 30 audio minutes in all, uneven so no cap splits them evenly.
MINUTES = {"a.wav": 4, "b.wav": 6, "c.wav": 4, "d.wav": 6, "e.wav": 4, "f.wav": 6}
CAP_MIN = 10
MS_PER_MIN = 60_000
PCM_BYTES_PER_MS = 32  # 16 kHz 16-bit mono, as every chunk is sent
WORDS = [
    "patient",
    "stable",
    "follow",
    "up",
    "in",
    "two",
    "weeks",
    "pain",
    "fever",
    "cough",
    "chest",
    "clear",
    "abdomen",
    "soft",
    "tender",
    "blood",
    "pressure",
    "normal",
    "review",
    "scan",
    "report",
    "advised",
    "rest",
    "fluids",
    "discharged",
]


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    root = tmp_path / "archive"
    root.mkdir()
    rng = np.random.default_rng(43)
    for name, minutes in MINUTES.items():
        samples = 16_000 * 60 * minutes
        parts, length = [], 0
        while length < samples:  # varied sentences: no loop for the quality gate to flag
            sentence = " ".join(rng.choice(WORDS, size=8)) + "."
            parts.append(encode_tone_dictation(sentence))
            length += len(parts[-1])
        soundfile.write(root / name, np.concatenate(parts)[:samples], 16_000, subtype="PCM_16")
    return root


@pytest.fixture
def capped(
    prefect_harness: None, flow_server: RunningDevServer, tmp_path: Path
) -> Iterator[Settings]:
    base = settings_for(flow_server, tmp_path / "medasr.db")
    settings = base.model_copy(
        update={
            # 5 MB chunks (156 s): few requests for 30 minutes of audio.
            "service": base.service.model_copy(update={"max_upload_bytes": 5_000_000}),
            "pipeline": base.pipeline.model_copy(update={"batch_size": 2}),
        }
    )
    with pinned_settings(settings):
        yield settings


def audio_ms(entry: LedgerEntry) -> int:
    return (entry.bytes - WAV_HEADER_BYTES) // PCM_BYTES_PER_MS


def sent(server: RunningDevServer) -> list[LedgerEntry]:
    return [e for e in server.ledger.entries() if e.bytes > 0]


def items(settings: Settings) -> dict[str, Any]:
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            return {Path(r.source).name: r for r in uow.item_queries.export_rows()}
    finally:
        store.dispose()


def latest_run(settings: Settings) -> RunRecord:
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            return uow.runs.latest_runs(limit=1)[0]
    finally:
        store.dispose()


def run_capped(root: Path, *, hours: float | None) -> tuple[Any, Any]:
    async def run() -> tuple[Any, Any]:
        state = await transcribe_backlog(
            source=str(root), language="en-IN", max_audio_hours=hours, return_state=True
        )
        return state, await summary_from(state)

    return asyncio.run(run())


async def night_markdown(flow_run_id: Any) -> str:
    async with get_client() as client:
        found = await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["medasr-night-en-in"])),
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])),
        )
    return str(found[0].data) if found else ""


def test_a_capped_run_sends_whole_recordings_up_to_the_cap_and_leaves_the_rest(
    capped: Settings, archive: Path, flow_server: RunningDevServer
) -> None:
    state, summary = run_capped(archive, hours=CAP_MIN / 60)

    entries = sent(flow_server)
    assert sum(audio_ms(e) for e in entries) <= CAP_MIN * MS_PER_MIN
    assert entries, "the cap leaves room for at least one recording"
    rows = items(capped)
    done = {name for name, row in rows.items() if row.status == "done"}
    pending = {name for name, row in rows.items() if row.status == "pending"}
    assert done | pending == set(MINUTES)
    assert pending, "30 minutes do not fit under a 10-minute cap"
    # Nothing half sent: a pending recording has no chunk in the store, and the audio
    # that reached the service is exactly the done recordings' audio.
    assert all(rows[name].chunks in (None, 0) for name in pending)
    done_ms = sum(MINUTES[name] * MS_PER_MIN for name in done)
    assert abs(sum(audio_ms(e) for e in entries) - done_ms) < 10 * len(entries)
    left_h = sum(MINUTES[name] for name in pending) / 60
    message = f"budget reached: {len(pending)} recordings ({round(left_h, 3):g} hours)"
    assert summary.exit_code == 0
    assert summary.budget_message == f"{message} left for the next run"
    assert state.type.value == "COMPLETED"
    assert message in (state.message or "")
    run = latest_run(capped)
    assert run.status == "budget_reached"
    assert run.counts["budget_left"] == len(pending)
    flow_run_id = state.state_details.flow_run_id
    assert message in asyncio.run(night_markdown(flow_run_id))

    # The next run (the CLI, no cap this time) finishes it; nothing is sent twice.
    result = CliRunner().invoke(app, ["run", str(archive), "--language", "en-IN"])

    assert result.exit_code == 0, result.output
    assert {row.status for row in items(capped).values()} == {"done"}
    again = sent(flow_server)
    assert len({e.sha256 for e in again}) == len(again)
    assert sum(audio_ms(e) for e in again) == pytest.approx(30 * MS_PER_MIN, abs=10 * len(again))


def test_the_cli_cap_prints_what_it_left_and_exits_0(
    capped: Settings, archive: Path, flow_server: RunningDevServer
) -> None:
    result = CliRunner().invoke(
        app, ["run", str(archive), "--language", "en-IN", "--max-audio-hours", "0.1"]
    )

    assert result.exit_code == 0, result.output
    assert sum(audio_ms(e) for e in sent(flow_server)) <= 6 * MS_PER_MIN
    pending = [r for r in items(capped).values() if r.status == "pending"]
    assert f"budget reached: {len(pending)} recordings (" in result.output
    assert "left for the next run" in result.output


@pytest.mark.parametrize("billed_min_s", [0, 200])
def test_the_dry_run_estimate_is_what_the_ledger_bills(
    capped: Settings, archive: Path, flow_server: RunningDevServer, billed_min_s: int
) -> None:
    price = 0.5
    settings = capped.model_copy(
        update={
            "service": capped.service.model_copy(
                update={"price_per_audio_min": price, "billed_min_s_per_request": billed_min_s}
            )
        }
    )
    with pinned_settings(settings):
        plan = table_rows(
            CliRunner()
            .invoke(app, ["run", str(archive), "--language", "en-IN", "--dry-run"])
            .output
        )
        result = CliRunner().invoke(app, ["run", str(archive), "--language", "en-IN"])
    assert result.exit_code == 0, result.output

    entries = sent(flow_server)
    assert int(plan["requests"]) == len(entries)
    # The vendor's bill from what reached it: each request its audio, at least the minimum.
    billed_ms = sum(max(audio_ms(e), billed_min_s * 1000) for e in entries)
    assert float(plan["billed minutes"]) == pytest.approx(billed_ms / MS_PER_MIN, abs=0.01)
    assert float(plan["estimated cost"]) == pytest.approx(billed_ms / MS_PER_MIN * price, abs=0.01)
    if billed_min_s:  # the last chunk of each recording is shorter than the minimum
        assert billed_ms > sum(audio_ms(e) for e in entries)
    assert Counter(e.language for e in entries) == {"en-IN": len(entries)}
