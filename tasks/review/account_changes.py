"""An admin's changes to reviewers' accounts, each inside the caller's unit of work.

add_account, disable_account, unlock_account: each makes its change and writes its own
audit event (reviewer_added with the role, reviewer_disabled, reviewer_unlocked; the
account as target, whoever asked as actor) in the same unit of work, so every face (the
command line, the workstation's admin page) gets the event by calling these;
tests/test_decision_owners.py keeps the faces from changing or auditing by themselves.
"""

from __future__ import annotations

from audit import AuditAction, record_event
from storage.records import ReviewerRecord
from storage.review_interface import ReviewUnitOfWork
from tasks.review.accounts import account_named, add_reviewer


def add_account(
    uow: ReviewUnitOfWork, *, name: str, role: str, password: str, actor: str
) -> ReviewerRecord:
    """Create an account (audited `reviewer_added`); raises ReviewerInvalid as add_reviewer."""
    added = add_reviewer(uow, name=name, role=role, password=password)
    record_event(
        uow,
        action=AuditAction.REVIEWER_ADDED,
        actor=actor,
        target=added.name,
        detail={"role": added.role},
    )
    return added


def disable_account(uow: ReviewUnitOfWork, *, name: str, actor: str) -> ReviewerRecord:
    """Disable the account a name names, whatever its case or form (audited
    `reviewer_disabled`); raises ReviewerInvalid for a bad or unknown name."""
    account = account_named(uow, name).name
    disabled = uow.reviewers.set_disabled(account, disabled=True)
    record_event(uow, action=AuditAction.REVIEWER_DISABLED, actor=actor, target=account)
    return disabled


def unlock_account(uow: ReviewUnitOfWork, *, name: str, actor: str) -> ReviewerRecord:
    """Unlock the account a name names, whatever its case or form (audited
    `reviewer_unlocked`); raises ReviewerInvalid for a bad or unknown name."""
    account = account_named(uow, name).name
    unlocked = uow.reviewers.unlock(account)
    record_event(uow, action=AuditAction.REVIEWER_UNLOCKED, actor=actor, target=account)
    return unlocked
