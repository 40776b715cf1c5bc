"""`medasr reviewers add|list|disable|unlock` (CliRunner over a real SQLite store)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from config.settings import StorageSettings
from flows.cli import app
from storage import open_review_store
from tests.helpers.review import audit_events

PASSWORD = "correct horse battery"


def test_add_list_disable_unlock(runner: CliRunner, sqlite_url: str) -> None:
    added = runner.invoke(
        app, ["reviewers", "add", "ann", "--role", "admin", "--password-stdin"], input=PASSWORD
    )
    assert added.exit_code == 0, added.output
    assert added.stdout == "added admin ann\n"
    assert PASSWORD not in added.output

    listed = runner.invoke(app, ["reviewers", "list"])
    assert listed.stdout.splitlines() == ["name\trole\tstate", "ann\tadmin\tactive"]

    assert runner.invoke(app, ["reviewers", "disable", "ann"]).exit_code == 0
    assert (
        runner.invoke(app, ["reviewers", "list"]).stdout.splitlines()[1] == "ann\tadmin\tdisabled"
    )
    assert runner.invoke(app, ["reviewers", "unlock", "ann"]).stdout == "unlocked ann\n"
    store = open_review_store(StorageSettings(database_url=sqlite_url))
    try:
        events = audit_events(store)
    finally:
        store.dispose()
    assert [(e.action, e.target) for e in events] == [
        ("reviewer_added", "ann"),
        ("reviewer_disabled", "ann"),
        ("reviewer_unlocked", "ann"),
    ]
    assert all(e.actor.startswith("os:") for e in events)
    assert PASSWORD not in repr(events)


def test_usage_errors_exit_2_with_one_line(runner: CliRunner) -> None:
    no_stdin = runner.invoke(app, ["reviewers", "add", "ann"])
    assert no_stdin.exit_code == 2
    assert "--password-stdin" in no_stdin.stderr

    runner.invoke(app, ["reviewers", "add", "ann", "--password-stdin"], input=PASSWORD)
    taken = runner.invoke(app, ["reviewers", "add", "ann", "--password-stdin"], input=PASSWORD)
    assert taken.exit_code == 2
    assert "exists already" in taken.stderr

    unknown = runner.invoke(app, ["reviewers", "unlock", "bob"])
    assert unknown.exit_code == 2
    assert "no reviewer named 'bob'" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["reviewers", "add", "ann", "Secret-Horse-99"],
        ["reviewers", "add", "ann", "--password", "Secret-Horse-99"],
        ["reviewers", "add", "ann", "--password=Secret-Horse-99"],
        ["reviewers", "add", "ann", "-p", "Secret-Horse-99"],
    ],
)
def test_a_password_given_as_an_argument_is_never_printed_back(
    runner: CliRunner, args: list[str]
) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "Secret-Horse-99" not in result.output
    assert "--password-stdin" in result.output
