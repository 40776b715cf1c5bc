"""`medasr review`, and needs_review in `medasr status` and `medasr export` (CliRunner)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from storage.sources import SourceFile

LANG = "en-IN"
SECRET_TEXT = "looped looped looped words"


@pytest.fixture
def ids(store: UnitOfWorkFactory) -> dict[str, int]:
    """Items: loop (repetition), tamil (script_mismatch, partial), clean (done), with chunks."""
    names = ("loop", "tamil", "clean")
    with store.unit_of_work() as uow:
        uow.items.register_items(
            [SourceFile(f"/a/{n}.wav", 10, "v1") for n in names], language=LANG
        )
        claimed = uow.claims.claim_batch(owner="w", language=LANG, limit=9, lease_s=60)
    by_name = {Path(item.source_uri).stem: item.id for item in claimed}
    tokens = {item.id: item.lease_token for item in claimed}
    flags = {"loop": ["repetition"], "tamil": ["script_mismatch", "partial"], "clean": []}
    with store.unit_of_work() as uow:
        for name, item_id in by_name.items():
            token = tokens[item_id]
            uow.chunks.record_chunk_result(
                item_id, lease_token=token, index=1, start_ms=0, end_ms=60_000, size_bytes=9,
                text=SECRET_TEXT,
            )  # fmt: skip
            uow.claims.finish_item(
                item_id, lease_token=token, text=SECRET_TEXT, duration_ms=60_000, chunk_count=1,
                extras={"chunks": []}, flags=flags[name],
            )  # fmt: skip
    return by_name


def item(store: UnitOfWorkFactory, item_id: int) -> ItemRecord:
    with store.unit_of_work(read_only=True) as uow:
        found = uow.item_queries.get_item(item_id)
    assert found is not None
    return found


def test_review_lists_flagged_items_without_their_text(runner: CliRunner, ids) -> None:
    result = runner.invoke(app, ["review"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "id\tsource\tlanguage\tflags\taudio_min\tupdated_at\treason"
    rows = {line.split("\t")[0]: line.split("\t") for line in lines[1:]}
    assert set(rows) == {str(ids["loop"]), str(ids["tamil"])}
    assert rows[str(ids["tamil"])][1:5] == ["/a/tamil.wav", LANG, "script_mismatch,partial", "1.0"]
    assert rows[str(ids["tamil"])][6] == "flag: script_mismatch, partial"
    assert "looped" not in result.stdout
    assert "2 item(s) need review" in result.stderr


def test_review_with_a_limit_counts_every_item_waiting(runner: CliRunner, ids) -> None:
    """--limit bounds the list, not the count: a reviewer told "1 need review" when 2
    wait would leave one unread."""
    result = runner.invoke(app, ["review", "--limit", "1"])

    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2  # the header and one item
    assert "2 item(s) need review (1 shown, --limit 1)" in result.stderr
    everyone = runner.invoke(app, ["review", "--limit", "5"])
    assert "2 item(s) need review\n" in everyone.stderr  # all shown: nothing more to say
    other = runner.invoke(app, ["review", "--limit", "1", "--language", "ta"])
    assert "0 item(s) need review\n" in other.stderr


def test_status_counts_needs_review(runner: CliRunner, ids) -> None:
    result = runner.invoke(app, ["status"])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"{LANG}\tneeds_review\t2\t0.03" in lines
    assert f"{LANG}\tdone\t1\t0.02" in lines


def test_exports_carry_flags_as_a_list(runner: CliRunner, ids, tmp_path: Path) -> None:
    jsonl, table = tmp_path / "items.jsonl", tmp_path / "items.csv"
    assert runner.invoke(app, ["export", "--format", "jsonl", "--out", str(jsonl)]).exit_code == 0
    assert runner.invoke(app, ["export", "--format", "csv", "--out", str(table)]).exit_code == 0

    rows = {
        json.loads(line)["source_uri"]: json.loads(line) for line in jsonl.read_text().splitlines()
    }
    assert rows["/a/tamil.wav"]["flags"] == ["script_mismatch", "partial"]
    assert rows["/a/tamil.wav"]["status"] == "needs_review"
    assert rows["/a/clean.wav"]["flags"] == []
    with table.open(encoding="utf-8", newline="") as handle:
        cells = {r["source_uri"]: r["flags"] for r in csv.DictReader(handle)}
    assert cells == {"/a/clean.wav": "", "/a/loop.wav": "repetition",
                     "/a/tamil.wav": "script_mismatch;partial"}  # fmt: skip


def test_export_selects_needs_review(runner: CliRunner, ids, tmp_path: Path) -> None:
    out = tmp_path / "review.jsonl"
    result = runner.invoke(
        app, ["export", "--format", "jsonl", "--out", str(out), "--status", "needs_review"]
    )
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 2


def test_accept_makes_the_item_done_and_keeps_what_was_flagged(
    runner: CliRunner, store: UnitOfWorkFactory, ids
) -> None:
    result = runner.invoke(app, ["review", "--accept", str(ids["tamil"])])

    assert result.exit_code == 0, result.output
    assert f"accepted item {ids['tamil']} (/a/tamil.wav): done" in result.stdout
    accepted = item(store, ids["tamil"])
    assert (accepted.status, accepted.flags, accepted.text) == ("done", [], SECRET_TEXT)
    assert accepted.extras["review"]["flags"] == ["script_mismatch", "partial"]
    assert accepted.extras["chunks"] == []
    listing = runner.invoke(app, ["review"]).stdout.splitlines()
    assert [line.split("\t")[0] for line in listing[1:]] == [str(ids["loop"])]


def test_resend_forgets_text_and_chunks_and_requeues(
    runner: CliRunner, store: UnitOfWorkFactory, ids
) -> None:
    result = runner.invoke(app, ["review", "--resend", str(ids["loop"])])

    assert result.exit_code == 0, result.output
    assert "pending" in result.stdout
    resent = item(store, ids["loop"])
    assert (resent.status, resent.text, resent.flags) == ("pending", None, [])
    with store.unit_of_work() as uow:
        assert uow.chunks.done_chunks(ids["loop"]) == {}
        claimed = uow.claims.claim_batch(owner="w2", language=LANG, limit=9, lease_s=60)
    assert [c.id for c in claimed] == [ids["loop"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--accept", "{clean}"], "is done, not needs_review"),
        (["--resend", "{clean}"], "is done, not needs_review"),
        (["--accept", "{loop}", "--accept", "9999"], "there is no item 9999"),
        (["--accept", "{loop}", "--resend", "{loop}"], "both --accept and --resend"),
        (["--language", "xx"], "unsupported language"),
    ],
    ids=["accept-done", "resend-done", "unknown-among-good", "both", "bad-language"],
)
def test_a_wrong_id_or_option_changes_nothing_and_exits_2(
    runner: CliRunner, store: UnitOfWorkFactory, ids, args: list[str], message: str
) -> None:
    result = runner.invoke(app, ["review", *(a.format(**ids) for a in args)])

    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert item(store, ids["loop"]).status == "needs_review"  # all or nothing
    assert item(store, ids["clean"]).status == "done"


def test_review_without_a_database_exits_2(runner: CliRunner) -> None:
    result = runner.invoke(app, ["review"])
    assert result.exit_code == 2
    assert "no database" in result.stderr


@pytest.mark.parametrize("args", [["--accept", "9999"], ["--resend", "{clean}"]])
def test_an_id_not_under_review_is_a_usage_error_not_a_configuration_error(
    runner: CliRunner, store: UnitOfWorkFactory, ids, args: list[str]
) -> None:
    result = runner.invoke(app, ["review", *(a.format(**ids) for a in args)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("medasr: usage error: ")
    assert "configuration error" not in result.stderr


def test_status_counts_what_waits_for_review_and_what_was_corrected(
    runner: CliRunner, ids, store: UnitOfWorkFactory
) -> None:
    with store.unit_of_work() as uow:
        revision = uow.revisions.add_revision(  # type: ignore[attr-defined]
            ids["loop"], text="corrected words", author="ann", base_revision=0, kind="final"
        )
        uow.revisions.sign_off(revision)  # type: ignore[attr-defined]
    result = runner.invoke(app, ["status"])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("review: ")]
    assert line.startswith("review: 1 waiting (oldest since ")
    assert line.endswith("), 1 corrected")


def test_review_says_why_a_routine_hold_waits(runner: CliRunner, store: UnitOfWorkFactory) -> None:
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile("/a/new.wav", 10, "v1")], language=LANG)
        [claimed] = uow.claims.claim_batch(owner="w", language=LANG, limit=1, lease_s=60)
        uow.claims.finish_item(
            claimed.id, lease_token=claimed.lease_token, text="words", duration_ms=1000,
            chunk_count=1, extras={"review_reason": "new author"}, flags=[], hold_for_review=True,
        )  # fmt: skip
    result = runner.invoke(app, ["review"])
    assert result.exit_code == 0, result.output
    [row] = [line.split("\t") for line in result.stdout.splitlines()[1:]]
    assert (row[3], row[6]) == ("", "new author")
