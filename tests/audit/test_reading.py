"""`medasr audit [filters] [--format]`: the trail read back; csv and jsonl are exports."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from audit import AuditAction, record_event
from flows.cli import app
from storage.interface import UnitOfWorkFactory


@pytest.fixture
def events(store: UnitOfWorkFactory) -> None:
    with store.unit_of_work() as uow:
        record_event(uow, action=AuditAction.LOGIN, actor="alice")
        record_event(
            uow, action=AuditAction.TRANSCRIPT_VIEWED, actor="alice", item_id=4,
            path="=HYPERLINK(\"http://x\")\tward.wav",
        )  # fmt: skip
        record_event(uow, action=AuditAction.EXPORTED, actor="os:bob@host", target="/tmp/e.csv")


def read(runner: CliRunner, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["audit", *args])
    return result.exit_code, result.stdout


def test_the_table_lists_every_event_oldest_first_on_one_line_each(
    runner: CliRunner, events: None
) -> None:
    code, out = read(runner)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split("\t") == [
        "seq", "time", "actor", "action", "item_id", "path", "target", "detail",
    ]  # fmt: skip
    assert [line.split("\t")[3] for line in lines[1:]] == ["login", "transcript_viewed", "exported"]
    assert "\\x09ward.wav" in lines[2]  # a tab inside a path cannot shift the columns


@pytest.mark.parametrize(
    ("args", "actions"),
    [
        (["--user", "alice"], ["login", "transcript_viewed"]),
        (["--user", "bob"], ["exported"]),  # os:bob@host found by the user's name
        (["--item", "4"], ["transcript_viewed"]),
        (["--action", "exported"], ["exported"]),
        (
            ["--since", "2000-01-01", "--until", "2999-12-31"],
            ["login", "transcript_viewed", "exported"],
        ),
        (["--until", "2000-01-01"], []),
        (["--until", "9999-12-31"], ["login", "transcript_viewed", "exported"]),  # the last day
        (["--since", "2999-01-01T00:00:00+00:00"], []),
    ],
)
def test_filters_pick_events(
    runner: CliRunner, events: None, args: list[str], actions: list[str]
) -> None:
    code, out = read(runner, "--format", "jsonl", *args)
    assert code == 0
    assert [json.loads(line)["action"] for line in out.splitlines()] == actions


def test_a_bad_filter_is_a_usage_error(runner: CliRunner, events: None) -> None:
    assert runner.invoke(app, ["audit", "--since", "yesterday"]).exit_code == 2
    assert runner.invoke(app, ["audit", "--action", "peeked"]).exit_code == 2


def test_csv_is_neutralised_and_the_export_is_itself_an_event(
    runner: CliRunner, events: None, store: UnitOfWorkFactory
) -> None:
    code, out = read(runner, "--format", "csv", "--user", "alice")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["action"] for r in rows] == ["login", "transcript_viewed"]
    assert rows[1]["path"].startswith("'=HYPERLINK")
    with store.unit_of_work(read_only=True) as uow:
        newest = uow.audit.newest_event()
    assert newest is not None
    assert newest.action == "audit_exported"
    assert newest.detail == {"events": 2, "format": "csv", "user": "alice"}
    code, _ = read(runner)  # reading is not recorded
    with store.unit_of_work(read_only=True) as uow:
        assert uow.audit.newest_event() == newest
