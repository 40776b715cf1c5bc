"""Commands that answer at once: each imports only what it uses; help pages stay as they were.

The quick commands run in a fresh interpreter each (a subprocess, as a cron job or a
person runs them) that reports which libraries ended up in `sys.modules`. The help pages
are compared with the ones captured before the commands became lazy (tests/flows/cli/
help/; `python -m tests.flows.cli.help_pages` writes them again after a deliberate change
of an option or a docstring).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import soundfile
from typer.testing import CliRunner

from devserver.tone import encode_tone_dictation
from flows.cli import app
from flows.cli.commands import COMMANDS, load_command
from tests.flows.cli.help_pages import HELP_DIR, HELP_PAGES, help_page, page_file
from tests.flows.prefect_server import clean_env
from tests.helpers.cli import modules_imported_by

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("prefect", "alembic", "sqlalchemy", "httpx", "numpy")


def imported_by(args: list[str], *, env: dict[str, str]) -> set[str]:
    """The HEAVY packages `medasr ARGS` imported in a fresh interpreter; it must succeed."""
    modules = modules_imported_by(args, env=env, cwd=ROOT)
    return {name.split(".")[0] for name in modules} & set(HEAVY)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    work = tmp_path_factory.mktemp("quick")
    wav = work / "note.wav"
    soundfile.write(wav, encode_tone_dictation("review in 6 weeks."), 16_000, subtype="PCM_16")
    env = clean_env(
        work / "prefect",
        MEDASR_DATABASE_URL=f"sqlite:///{work / 'medasr.db'}",
        QUICK_WORK=str(work),
    )
    imported_by(["db", "upgrade"], env=env)  # the others read a store that exists
    return env


# Each quick command, and what it may import of HEAVY (anything else there is a defect).
QUICK = [
    (["--help"], set()),
    (["db", "upgrade"], {"sqlalchemy"}),  # at the newest already: nothing to migrate
    (["status"], {"sqlalchemy"}),  # Alembic only to migrate: the store is at the newest
    (["export", "--format", "jsonl", "--out", "{work}/out.jsonl"], {"sqlalchemy"}),
    (["review"], {"sqlalchemy"}),
    (["split", "{work}/note.wav", "--out", "{work}/chunks"], {"numpy"}),
]


@pytest.mark.parametrize(("args", "allowed"), QUICK, ids=[" ".join(args[:2]) for args, _ in QUICK])
def test_a_quick_command_imports_only_what_it_uses(
    env: dict[str, str], args: list[str], allowed: set[str]
) -> None:
    heavy = imported_by([arg.format(work=env["QUICK_WORK"]) for arg in args], env=env)
    assert heavy <= allowed, f"`medasr {' '.join(args)}` imported {sorted(heavy - allowed)}"


@pytest.mark.parametrize("args", HELP_PAGES, ids=lambda args: " ".join(args) or "medasr")
def test_every_help_page_is_as_it_was(args: list[str]) -> None:
    expected = page_file(args).read_text()
    assert help_page(CliRunner(), args) == expected, (
        f"`medasr {' '.join(args)} --help` changed; if on purpose, "
        f"`python -m tests.flows.cli.help_pages` rewrites {HELP_DIR.name}/"
    )


@pytest.mark.parametrize("entry", COMMANDS, ids=lambda entry: entry.name)
def test_the_listed_summary_is_the_commands_own(entry) -> None:  # type: ignore[no-untyped-def]
    command = load_command(entry)
    assert command.name == entry.name
    first = (command.help or "").split("\n\n")[0]
    assert first.split() == entry.summary.split()  # the same words (help is unwrapped)


def test_an_unknown_command_is_refused_with_a_suggestion() -> None:
    result = CliRunner().invoke(app, ["stat"], env={"COLUMNS": "100"})
    assert result.exit_code == 2
    assert "No such command 'stat'. Did you mean 'status'?" in result.output
