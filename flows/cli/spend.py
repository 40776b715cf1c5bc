"""`medasr status --by COLUMN`: what the recordings cost, per value of a column.

A face: the options parsed, one read of the store (tasks/transcription/billing.py groups
what `uow.spend` streams), the rows rendered as a table, CSV or JSON lines. CSV cells
are neutralised as the exports' are (a value a spreadsheet would run is text). Values
come from the manifest, so they are printed escaped onto one line; never a name or text.
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime
from difflib import get_close_matches
from enum import StrEnum

import typer
from rich.console import Console
from rich.table import Table

from audit.filters import parse_when
from config.errors import ConfigError
from config.settings import Settings
from service.contract import is_supported_language
from storage import open_store
from storage.database import database_exists
from storage.export import neutralise_cell
from storage.interface import SpendRepository
from tasks.discovery.recording_names import one_line
from tasks.transcription.billing import (
    LANGUAGE_GROUP,
    MONTH_GROUP,
    SpendGroup,
    spend_by,
    spend_rows,
    total_of,
)


class SpendFormat(StrEnum):
    """How `medasr status --by` prints."""

    table = "table"
    csv = "csv"
    jsonl = "jsonl"


def print_spend(
    settings: Settings,
    *,
    column: str,
    since: str | None,
    until: str | None,
    language: str | None,
    output: SpendFormat,
) -> None:
    """Print the cost per value of `column`; raises ConfigError for a bad date, a language
    the service does not take or a column no recording has, StoreError."""
    since_at = parse_when(since, option="--since") if since else None
    until_at = parse_when(until, option="--until", end_of_day=True) if until else None
    if language is not None and not is_supported_language(language):
        raise ConfigError(f"unsupported language {language[:16]!r}")
    service = settings.service
    groups = _spend_groups(
        settings, column=column, since=since_at, until=until_at, language=language
    )
    rows = list(spend_rows(groups, column=column, price_per_audio_min=service.price_per_audio_min))
    total = total_of(groups).row(column=column, price_per_audio_min=service.price_per_audio_min)
    if output is SpendFormat.csv:
        _print_csv(rows)
    elif output is SpendFormat.jsonl:
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
    else:
        _print_table(rows, total=total, column=column)


def _spend_groups(
    settings: Settings,
    *,
    column: str,
    since: datetime | None,
    until: datetime | None,
    language: str | None,
) -> list[SpendGroup]:
    """The store's recordings grouped by `column` (none before a store exists)."""
    if not database_exists(settings.storage.database_url):
        return []
    store = open_store(settings.storage)
    try:
        with store.unit_of_work(read_only=True) as uow:
            _check_column(uow.spend, column)
            sent = uow.spend.sent_recordings(
                billed_min_ms=round(settings.service.billed_min_s_per_request * 1000),
                since=since,
                until=until,
                language=language,
            )
            return spend_by(sent, column=column)
    finally:
        store.dispose()


def _check_column(spend: SpendRepository, column: str) -> None:
    """A manifest column must be one some recording holds: a misspelt one would print a
    single "(none)" row, which reads as every recording lacking a value. Raises
    ConfigError naming the columns there are."""
    if column in (LANGUAGE_GROUP, MONTH_GROUP) or spend.has_column(column):
        return
    manifest = spend.columns() - {LANGUAGE_GROUP, MONTH_GROUP}
    there = ", ".join(one_line(name) for name in sorted(manifest))
    groups = f"{LANGUAGE_GROUP}, {MONTH_GROUP}"
    closest = get_close_matches(column, [*manifest, LANGUAGE_GROUP, MONTH_GROUP], n=1)
    meant = f" (did you mean {one_line(closest[0])!r}?)" if closest else ""
    raise ConfigError(
        f"--by {one_line(column)[:64]!r} is no column of any recording{meant}; "
        f"use {there + ', ' if there else ''}{groups}"
    )


def _print_csv(rows: list[dict[str, str | int | float]]) -> None:
    if not rows:
        return
    writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]), quoting=csv.QUOTE_NONNUMERIC)
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {k: neutralise_cell(v) if isinstance(v, str) else v for k, v in row.items()}
        )


def _print_table(
    rows: list[dict[str, str | int | float]], *, total: dict[str, str | int | float], column: str
) -> None:
    console = Console()
    names = list(total)
    if not console.is_terminal:  # tab-separated, one row per line, for a script
        typer.echo("\t".join(names))
        for row in [*rows, total]:
            typer.echo("\t".join(one_line(str(row[name])) for name in names))
        return
    table = Table(title=f"Spend by {one_line(column)}")
    for i, name in enumerate(names):
        table.add_column(name.replace("_", " "), justify="left" if i == 0 else "right")
    for row in [*rows, total]:
        table.add_row(*(one_line(str(row[name])) for name in names))
    console.print(table)
