"""Runs: one row per pass of a flow over a source, with its counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Row, select, union, update
from sqlalchemy.orm import Session

from storage import clock
from storage.models import RUN_COUNT_COLUMNS, ListedSource, Run
from storage.records import RunRecord


class Runs:
    """Start, finish and read runs inside one session."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def start_run(self, *, source: str, language: str) -> int:
        """Record the start of a run; returns its id."""
        run = Run(source=source, language=language, status="running", started_at=clock.host_now())
        self._session.add(run)
        self._session.flush()
        return run.id

    def finish_run(self, run_id: int, *, counts: Mapping[str, int], status: str) -> None:
        """Record a run's end, status and counts (unknown count names kept aside)."""
        known = {k: int(v) for k, v in counts.items() if k in RUN_COUNT_COLUMNS}
        other = {k: int(v) for k, v in counts.items() if k not in RUN_COUNT_COLUMNS}
        self._session.execute(
            update(Run)
            .where(Run.id == run_id)
            .values(
                status=status, finished_at=clock.host_now(), other_counts=other or None, **known
            )
            .execution_options(synchronize_session=False)
        )

    def run_sources(self) -> list[str]:
        """Every source a run was recorded over or a listing noted (listed_sources: a run
        interrupted before its row exists), sorted."""
        both = union(select(Run.source), select(ListedSource.uri))
        return sorted(self._session.scalars(select(both.subquery().c[0])))

    def latest_runs(self, *, limit: int = 5) -> list[RunRecord]:
        """The latest runs, newest first."""
        rows = self._session.execute(
            select(Run.__table__).order_by(Run.id.desc()).limit(limit)
        ).all()
        return [_run_record(row) for row in rows]


def _run_record(row: Row[Any]) -> RunRecord:
    counts = {name: getattr(row, name) for name in RUN_COUNT_COLUMNS}
    counts.update(row.other_counts or {})
    return RunRecord(
        id=row.id,
        started_at=row.started_at,
        finished_at=row.finished_at,
        source=row.source,
        language=row.language,
        status=row.status,
        counts=counts,
    )
