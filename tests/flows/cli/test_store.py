"""`medasr status`, `medasr export`, `medasr db upgrade` through Typer's CliRunner."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import stat
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_store
from storage.database import head_revision
from storage.export import EXPORT_COLUMNS
from storage.records import WantedDelivery
from storage.sources import SourceFile

LANG = "en-IN"


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    return tmp_path / "archive"


@pytest.fixture
def filled(runner: CliRunner, tmp_path: Path, archive: Path) -> dict[str, str]:
    """A store with done (local, bucket, two languages), failed and pending items."""
    sources = {
        "a": str(archive / "a.wav"),
        "b": str(archive / "sub dir" / "b é.mp3"),
        "c": str(archive / "c.wav"),
        "d": "s3://bucket/key/d.wav",
        "e": str(archive / "e.wav"),
    }
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(u, 10, "v1") for u in sources.values()], language=LANG)
        uow.items.register_items([SourceFile(sources["a"], 10, "v1")], language="hi")
    texts = {"a": 'alpha, "quoted"\nsecond line', "b": "bravo", "d": "delta"}
    with store.unit_of_work() as uow:
        claimed = {
            (i.source_uri, i.language): i
            for i in uow.claims.claim_batch(owner="w", language=None, limit=9, lease_s=60)
        }
    with store.unit_of_work() as uow:
        for key, text in texts.items():
            item = claimed[sources[key], LANG]
            uow.claims.finish_item(item.id, lease_token=item.lease_token, text=text,
                             duration_ms=1_800_000, chunk_count=2, extras={})  # fmt: skip
        hindi = claimed[sources["a"], "hi"]
        uow.claims.finish_item(hindi.id, lease_token=hindi.lease_token, text="namaste",
                         duration_ms=900_000, chunk_count=1, extras={})  # fmt: skip
        rejected = claimed[sources["c"], LANG]
        uow.claims.fail_item(rejected.id, lease_token=rejected.lease_token,
                       error_kind="request_rejected",
                       message="the service refused the request (400)", retryable=False,
                       next_attempt_at=None)  # fmt: skip
        released = claimed[sources["e"], LANG].lease_token
        assert released is not None
        uow.claims.release_items([released])
    store.dispose()
    return sources


def test_status_prints_counts_hours_and_failures(runner: CliRunner, filled) -> None:
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "en-IN\tdone\t3\t1.50" in lines
    assert "en-IN\tfailed\t1\t0.00" in lines
    assert "en-IN\tpending\t1\t0.00" in lines
    assert "hi\tdone\t1\t0.25" in lines
    assert "audio hours done: 1.75" in lines
    assert any(
        line.startswith(filled["c"]) and "the service refused the request (400)" in line
        for line in lines
    )
    assert "alpha" not in result.stdout  # never a transcript


def test_export_jsonl_fields_are_exact(runner: CliRunner, filled, tmp_path: Path) -> None:
    out = tmp_path / "out" / "items.jsonl"
    result = runner.invoke(app, ["export", "--format", "jsonl", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(list(row) == list(EXPORT_COLUMNS) for row in rows)
    assert {
        "source", "language", "status", "text", "error_kind", "error_message",
        "duration_ms", "chunks", "attempts", "updated_at",
    } <= set(EXPORT_COLUMNS)  # fmt: skip
    by_key = {(r["source_uri"], r["language"]): r for r in rows}
    assert len(rows) == 6
    a = by_key[(filled["a"], LANG)]
    assert a["status"] == "done"
    assert a["text"] == 'alpha, "quoted"\nsecond line'
    assert (a["duration_ms"], a["chunks"], a["attempts"]) == (1_800_000, 2, 1)
    assert datetime.fromisoformat(a["updated_at"]).tzinfo is not None
    c = by_key[(filled["c"], LANG)]
    assert (c["status"], c["error_kind"], c["text"]) == ("failed", "request_rejected", None)
    assert by_key[("s3://bucket/key/d.wav", LANG)]["text"] == "delta"
    assert by_key[(filled["b"], LANG)]["source_uri"].endswith("sub dir/b é.mp3")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_export_csv_has_the_same_columns(runner: CliRunner, filled, tmp_path: Path) -> None:
    out = tmp_path / "items.csv"
    result = runner.invoke(
        app, ["export", "--format", "csv", "--out", str(out), "--status", "done"]
    )
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert tuple(reader.fieldnames or ()) == EXPORT_COLUMNS
    assert [r["status"] for r in rows] == ["done"] * 4
    a = next(r for r in rows if r["source_uri"] == filled["a"] and r["language"] == LANG)
    assert a["text"] == 'alpha, "quoted"\nsecond line'


def test_export_txt_mirrors_the_sources(runner: CliRunner, filled, tmp_path: Path) -> None:
    out = tmp_path / "transcripts"
    result = runner.invoke(app, ["export", "--format", "txt", "--out", str(out)])
    assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert written == [
        "a.txt",
        "a.wav.hi.txt",
        "bucket/key/d.txt",
        "sub dir/b é.txt",
    ]
    assert (out / "a.txt").read_text(encoding="utf-8") == 'alpha, "quoted"\nsecond line\n'
    assert (out / "a.wav.hi.txt").read_text(encoding="utf-8") == "namaste\n"
    assert stat.S_IMODE((out / "a.txt").stat().st_mode) == 0o600


def test_export_refuses_an_unknown_status(runner: CliRunner, filled, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["export", "--format", "jsonl", "--out", str(tmp_path / "x"), "--status", "nope"]
    )
    assert result.exit_code == 2
    assert "--status must be one of" in result.stderr


@pytest.mark.parametrize("command", [["status"], ["db", "upgrade"]], ids=["status", "upgrade"])
@pytest.mark.parametrize(
    "url",
    ["mysql://user:s3cret@db/x", "postgresql://user:s3cret@127.0.0.1:notaport/db"],
    ids=["mysql", "port-not-a-number"],
)
def test_bad_database_url_exits_2_with_one_line(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, command: list[str], url: str
) -> None:
    monkeypatch.setenv("MEDASR_DATABASE_URL", url)
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "MEDASR_DATABASE_URL" in result.stderr
    assert "s3cret" not in result.stderr


def test_status_before_anything_ran_creates_nothing(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0
    assert "nothing recorded yet" in result.stdout
    assert not (tmp_path / "medasr.db").exists()


def test_export_without_a_database_exits_2(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", "--format", "csv", "--out", str(tmp_path / "x.csv")])
    assert result.exit_code == 2
    assert "no database" in result.stderr


def test_db_upgrade_creates_and_migrates(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert f"at revision {head_revision()}" in result.stdout
    assert stat.S_IMODE((tmp_path / "medasr.db").stat().st_mode) == 0o600


def test_status_on_a_terminal_draws_tables(
    runner: CliRunner, filled, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich treats the output as a terminal
    monkeypatch.setenv("COLUMNS", "200")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    shown = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout)
    assert "Latest failures" in shown
    assert "Audio done: 1.75 h" in shown
    assert "\t" not in shown


def fill(tmp_path: Path, outcomes: dict[str, str], *, message: str = "refused") -> None:
    """Items with these sources, each finished with its text, or failed when text is None."""
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(u, 10, "v1") for u in outcomes], language=LANG)
        items = uow.claims.claim_batch(owner="w", language=None, limit=len(outcomes), lease_s=60)
    with store.unit_of_work() as uow:
        for item in items:
            text = outcomes[item.source_uri]
            if text:
                uow.claims.finish_item(item.id, lease_token=item.lease_token, text=text,
                                 duration_ms=1, chunk_count=1, extras={})  # fmt: skip
            else:
                uow.claims.fail_item(item.id, lease_token=item.lease_token,
                               error_kind="request_rejected", message=message,
                               retryable=False, next_attempt_at=None)  # fmt: skip
    store.dispose()


def test_txt_layout_does_not_change_with_status(runner: CliRunner, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    fill(tmp_path, {str(archive / "x" / "deep" / "one.wav"): "one", str(archive / "y.wav"): ""})
    for status in ([], ["--status", "done"]):
        out = tmp_path / f"out{len(status)}"
        result = runner.invoke(app, ["export", "--format", "txt", "--out", str(out), *status])
        assert result.exit_code == 0, result.output
        assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.txt")) == [
            "x/deep/one.txt"
        ]


def test_plain_status_escapes_control_characters(runner: CliRunner, tmp_path: Path) -> None:
    source = str(tmp_path / "tab\there" / "new\nline.wav")
    fill(tmp_path, {source: ""}, message="first\tcell\r\nsecond \x1b[31mred\u2028end")
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    failure = lines[lines.index("latest failures:") + 2 :]  # after the title and header
    assert len(failure) == 1
    assert failure[0].count("\t") == 5
    shown_source, _, _, _, _, shown_message = failure[0].split("\t")
    assert shown_source == source.replace("\t", "\\t").replace("\n", "\\n")
    assert shown_message == "first\\tcell\\r\\nsecond \\u001b[31mred\\u2028end"


def test_status_does_not_wait_behind_a_writer(
    runner: CliRunner, filled, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEDASR_STORAGE__BUSY_TIMEOUT_MS", "3000")
    writer = sqlite3.connect(tmp_path / "medasr.db", isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")  # a flow run in the middle of a claim
        writer.execute("UPDATE items SET attempts = attempts + 1")
        result = runner.invoke(app, ["status"])
    finally:
        writer.close()
    # A read that waited for the write lock could only fail: the writer never let go.
    assert result.exit_code == 0, result.output
    assert "en-IN\tdone\t3\t1.50" in result.stdout.splitlines()


def test_status_lists_skipped_recordings_in_their_own_section(
    runner: CliRunner, tmp_path: Path
) -> None:
    quiet, broken = str(tmp_path / "a" / "quiet.wav"), str(tmp_path / "a" / "broken.wav")
    fill(tmp_path, {broken: ""}, message="not an audio file")
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(quiet, 10, "v1")], language=LANG)
        [item] = uow.claims.claim_batch(owner="w", language=LANG, limit=1, lease_s=60)
    with store.unit_of_work() as uow:
        uow.claims.skip_item(item.id, lease_token=item.lease_token, reason_kind="silent_audio",
                       reason="no speech: a steady tone, hum or noise")  # fmt: skip
    store.dispose()

    result = runner.invoke(app, ["status"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "en-IN\tskipped\t1\t0.00" in lines
    failures = lines[lines.index("latest failures:") + 2 : lines.index("latest skipped:")]
    assert [line.split("\t")[0] for line in failures] == [broken]
    skipped = lines[lines.index("latest skipped:") + 2 :]
    assert skipped[0] == (
        f"{quiet}\t{LANG}\tsilent_audio\t1\tskipped\tno speech: a steady tone, hum or noise"
    )
    assert len(skipped) == 1
    assert "--include-skipped" in result.stderr


def test_status_counts_deliveries_by_status(
    runner: CliRunner, filled, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(StorageSettings(database_url=f"sqlite:///{tmp_path / 'medasr.db'}"))
    with store.unit_of_work() as uow:
        done = [
            i for i in uow.item_queries.list_latest(status="done", limit=10) if i.language == LANG
        ]
        wanted = [WantedDelivery(item_id=i.id, language=LANG, version=f"v{i.id}") for i in done]
        assert uow.deliveries.plan_deliveries(wanted, format_name="txt") == 3
    store.dispose()
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[lines.index("delivery_status\trows") + 1] == "pending\t3"
    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich treats the output as a terminal
    shown = re.sub(r"\x1b\[[0-9;]*m", "", runner.invoke(app, ["status"]).stdout)
    assert re.search(r"Deliveries.*pending\W+3", shown, re.S)


def test_status_without_deliveries_prints_no_delivery_section(runner: CliRunner, filled) -> None:
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    assert "delivery_status" not in result.stdout
