"""Each review decision, each change to a reviewer's account, and each sign-in and
sign-out has one owner: tasks/review/, which changes the review state, the account or the
session and writes the decision's audit event in the same unit of work. Read from the
source with `ast` (nothing is imported), like tests/test_layout.py.

A face (the command line, the workstation, a future API) parses, calls one decision
function and renders: it neither calls the repository methods that change a recording's
review state or an account (nor tasks/review/accounts.add_reviewer, which adds one
without an event, for seeding) nor writes a decision's audit event, so no face can make
a decision without its event. A failure lists every offending line as "path:line calls X".
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "config", "service", "storage", "tasks", "flows", "web")
# The modules allowed to change review state: the decisions and the store they call.
OWNERS = ("tasks/review/", "storage/")
# Repository methods that change a recording's review state.
REVIEW_WRITERS = frozenset({"accept_review", "resend_review", "add_revision", "sign_off"})
# Calls that change an account (repository methods, and accounts.add_reviewer by name),
# and those that settle a sign-in or start and end a workstation session.
ACCOUNT_WRITERS = frozenset({"add_reviewer", "set_disabled", "unlock"}) | frozenset(
    {"record_failure", "record_success", "settle_sign_in", "start_session", "end_session"}
)
# The audit actions of review decisions and account changes (audit/actions.py).
DECISION_ACTIONS = frozenset(
    {"ACCEPTED", "SENT_BACK", "REVISION_SAVED", "FINALIZED", "LANGUAGE_CHANGED"}
    | {"REVIEWER_ADDED", "REVIEWER_DISABLED", "REVIEWER_UNLOCKED"}
    | {"LOGIN", "LOGIN_FAILED", "LOCKED_OUT", "LOGOUT"}
)


def _offences(source: str, *, path: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in REVIEW_WRITERS
        ):
            found.append(f"{path}:{node.lineno} calls {node.func.attr}")
        if isinstance(node, ast.Call) and _called(node) in ACCOUNT_WRITERS:
            found.append(f"{path}:{node.lineno} calls {_called(node)}")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "AuditAction"
            and node.attr in DECISION_ACTIONS
        ):
            found.append(f"{path}:{node.lineno} writes AuditAction.{node.attr}")
    return found


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else None


def _faces() -> list[Path]:
    return [
        path
        for top in PACKAGES
        for path in sorted((ROOT / top).rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(OWNERS)
    ]


def test_only_the_decision_functions_change_review_state_and_write_its_events() -> None:
    offences = [
        offence
        for path in _faces()
        for offence in _offences(path.read_text(encoding="utf-8"), path=str(path.relative_to(ROOT)))
    ]
    assert offences == []


def test_the_faces_are_read() -> None:
    read = {str(p.relative_to(ROOT)) for p in _faces()}
    assert {"flows/cli/review.py", "web/review_actions.py"} <= read
    assert {"flows/cli/reviewers.py", "web/admin.py"} <= read
    assert not any(p.startswith(OWNERS) for p in read)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("uow.reviews.accept_review(7, by='a')", ["x.py:1 calls accept_review"]),
        ("store.revisions.sign_off(r)", ["x.py:1 calls sign_off"]),
        (
            "record_event(uow, action=AuditAction.SENT_BACK, actor='a')",
            ["x.py:1 writes AuditAction.SENT_BACK"],
        ),
        ("decisions.accept_as_is(uow, item_id=7, author='a', base_revision=None)", []),
        (
            "record_event(uow, action=AuditAction.LOGIN, actor='a')",
            ["x.py:1 writes AuditAction.LOGIN"],
        ),
        ("uow.web_sessions.end_session(digest)", ["x.py:1 calls end_session"]),
        ("record_event(uow, action=AuditAction.TRANSCRIPT_VIEWED, actor='a')", []),
        ("uow.reviewers.unlock('ann')", ["x.py:1 calls unlock"]),
        ("uow.reviewers.set_disabled('ann', disabled=True)", ["x.py:1 calls set_disabled"]),
        ("add_reviewer(uow, name='ann', role='admin', password=p)", ["x.py:1 calls add_reviewer"]),
        (
            "record_event(uow, action=AuditAction.REVIEWER_ADDED, actor='a')",
            ["x.py:1 writes AuditAction.REVIEWER_ADDED"],
        ),
        ("account_changes.unlock_account(uow, name='ann', actor='a')", []),
    ],
)
def test_a_face_deciding_itself_is_named(source: str, expected: list[str]) -> None:
    assert _offences(source, path="x.py") == expected
