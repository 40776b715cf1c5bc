"""One reading of an error a command ends on: its line and its exit code (config/errors.py),
said the same by every command (flows/cli/error_exits.py) and by `main`."""

from __future__ import annotations

import pytest
import typer

from config.errors import (
    EXIT_SOME_FAILED,
    EXIT_USAGE,
    ConfigError,
    MedasrError,
    error_line,
    exit_code_for,
)
from flows.cli import commands
from flows.cli.error_exits import command_errors
from storage.errors import NotEditable, NotUnderReview, StaleRevision, StoreUnavailable
from tasks.errors import AudioError


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        (ConfigError("bad\nsetting"), EXIT_USAGE, "medasr: configuration error: bad\nsetting"),
        (
            NotUnderReview("item 9 waits for no review"),
            EXIT_USAGE,
            "medasr: usage error: item 9 waits for no review",
        ),
        (StaleRevision("saved over"), EXIT_USAGE, "medasr: usage error: saved over"),
        (NotEditable("no transcript"), EXIT_USAGE, "medasr: usage error: no transcript"),
        (StoreUnavailable("locked"), EXIT_SOME_FAILED, "medasr: locked"),
        (AudioError("bad audio"), EXIT_SOME_FAILED, "medasr: bad audio"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, MedasrError) else None,
)
def test_a_command_ends_on_an_error_with_one_line_and_its_code(
    error: MedasrError, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (exit_code_for(error), error_line(error)) == (code, line)
    with pytest.raises(typer.Exit) as ended, command_errors():
        raise error
    assert ended.value.exit_code == code
    assert capsys.readouterr().err == line.replace("\n", "\\n") + "\n"  # escaped: one line


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConfigError("bad"), EXIT_USAGE),
        (NotUnderReview("item 9 waits for no review"), EXIT_USAGE),
        (StoreUnavailable("x"), EXIT_SOME_FAILED),
    ],
)
def test_main_ends_what_escaped_a_command_the_same_way(
    error: MedasrError, code: int, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    def fails(**_: object) -> None:
        raise error

    monkeypatch.setattr(commands, "app", fails)
    # main's process set-up (Prefect's defaults, SIGPIPE) is not this test's business.
    monkeypatch.setattr(commands, "prepare_prefect_environment", lambda: None)
    monkeypatch.setattr(commands, "outlive_readers", lambda: None)
    with pytest.raises(SystemExit) as ended:
        commands.main()
    assert ended.value.code == code
    assert capsys.readouterr().err == error_line(error) + "\n"
