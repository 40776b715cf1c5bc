"""The nightly flow's delivery step: off by default, with MEDASR_DELIVER=true after the backlog."""

from __future__ import annotations

import hashlib
from pathlib import Path

from config.settings import Settings, pinned_settings
from devserver import RunningDevServer
from flows.backlog import transcribe_backlog
from flows.reporting.summary import RunSummary
from tests.helpers.flows import Corpus, run_flow

DOCS = "/mr/api/v2/docs"


def run_backlog(root: Path) -> RunSummary:
    return run_flow(transcribe_backlog, source=str(root), language="en-IN")


def docs_lines(server: RunningDevServer) -> list:
    return [e for e in server.ledger.entries() if e.path == DOCS]


def test_the_backlog_delivers_nothing_unless_asked(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    summary = run_backlog(corpus.root)
    assert summary.files_done == len(corpus.texts)
    assert summary.delivery is None
    assert docs_lines(flow_server) == []


def test_with_deliver_on_each_done_transcript_is_delivered_once_with_its_manifest(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    rows = "\n".join(f"{name},P-{i}" for i, name in enumerate(sorted(corpus.texts)))
    (corpus.root / "medasr.csv").write_text(f"path,patient_id\n{rows}\n", encoding="utf-8")
    delivery = pinned.delivery.model_copy(
        update={"enabled": True, "docs_query": "patient_id={patient_id}"}
    )
    with pinned_settings(pinned.model_copy(update={"delivery": delivery})):
        first = run_backlog(corpus.root)
        second = run_backlog(corpus.root)

    lines = docs_lines(flow_server)
    assert first.delivery is not None
    assert second.delivery is not None
    assert first.delivery.delivered == len(corpus.texts)
    assert first.delivery.failed == 0
    assert (second.delivery.planned, second.delivery.delivered) == (0, 0)
    assert len(lines) == len(corpus.texts)  # sent twice: 0
    expected = {hashlib.sha256(t.encode()).hexdigest() for t in corpus.texts.values()}
    assert {line.sha256 for line in lines} == expected
    assert sorted(line.query for line in lines) == [
        f"patient_id=P-{i}" for i in range(len(corpus.texts))
    ]


def test_with_deliver_on_and_no_patient_link_the_step_stops_saying_why_and_sends_nothing(
    pinned: Settings, corpus: Corpus, flow_server: RunningDevServer
) -> None:
    delivery = pinned.delivery.model_copy(update={"enabled": True, "docs_query": ""})
    with pinned_settings(pinned.model_copy(update={"delivery": delivery})):
        summary = run_backlog(corpus.root)
    assert summary.files_done == len(corpus.texts)  # the night's transcripts are kept
    assert summary.delivery is not None
    assert (summary.delivery.delivered, summary.delivery.exit_code) == (0, 2)
    assert docs_lines(flow_server) == []
