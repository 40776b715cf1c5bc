"""The filters of `medasr audit`: dates, a user, an item, an action, checked once."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from audit.actions import AuditAction
from audit.errors import AuditFilterInvalid
from storage.audit_records import AuditFilter

_ONE_DAY = timedelta(days=1)


def parse_when(text: str, *, option: str, end_of_day: bool = False) -> datetime:
    """An ISO date or date-time as aware UTC (a bare date-time is UTC). A bare date is its
    start, or with `end_of_day` the start of the next day (so --until DAY includes DAY;
    the calendar's last day runs to its last microsecond)."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            if not end_of_day:
                return start
            return datetime.max.replace(tzinfo=UTC) if day == date.max else start + _ONE_DAY
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise AuditFilterInvalid(
            f"{option} takes a date (2026-11-30) or a date and time (2026-11-30T08:00:00Z); "
            f"got {text[:40]!r}"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def audit_filter(
    *,
    since: str | None,
    until: str | None,
    user: str | None,
    item_id: int | None,
    action: str | None,
) -> AuditFilter:
    """The AuditFilter the options ask for; raises AuditFilterInvalid."""
    if action is not None and action not in {a.value for a in AuditAction}:
        known = ", ".join(a.value for a in AuditAction)
        raise AuditFilterInvalid(f"--action must be one of {known} (got {action[:40]!r})")
    return AuditFilter(
        since=parse_when(since, option="--since") if since else None,
        until=parse_when(until, option="--until", end_of_day=True) if until else None,
        actor=user or None,
        item_id=item_id,
        action=action,
    )
