"""The run's Prefect artifacts: the night as a person reads it, and the counts for tools.

- `medasr-night-<language>` (markdown): a headline with readable labels, then one row per
  recording still open in the store (failed, held for review, skipped) with its kind,
  whether a rerun can fix it and the command that does. The key stays, the description
  names the night (language, source, date, counts), so the version history is a history;
  last night's problems stay in it until they are resolved.
- `medasr-summary` (table): the run's counts under the names the CLI prints (tools read it).
- `medasr-progress`: recordings processed in this run, moved per file (flows/drain.py).

Recordings are named by their path relative to the source; never transcript text.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from prefect.artifacts import acreate_markdown_artifact, acreate_table_artifact

from flows.reporting.run_names import ALL_LANGUAGES, source_label, today
from flows.reporting.states import counts_message
from flows.reporting.summary import RunSummary
from flows.setup.bootstrap import Run
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord, ItemStatus
from tasks.delivery.stats import in_doubt_rows
from tasks.discovery.recording_names import one_line, reason_about, recording_name
from tasks.transcription.bookkeeping import open_backlog

SUMMARY_KEY = "medasr-summary"
ROWS_MAX = 50  # per status in the night's table; `medasr status --failures N` lists all


@dataclass(frozen=True)
class Night:
    """What names one night's artifacts: language, source label, date."""

    language: str
    source: str
    date: str

    @classmethod
    def of(cls, run: Run) -> Night:
        """The night of this run (the date in UTC)."""
        return cls(
            language=run.claim_language or ALL_LANGUAGES, source=source_label(run), date=today()
        )

    @property
    def key(self) -> str:
        """The markdown artifact's key: one series per language."""
        return "medasr-night-" + re.sub(r"[^a-z0-9]+", "-", self.language.lower()).strip("-")


async def publish_summary(run: Run, summary: RunSummary, *, title: str) -> None:
    """Publish the night's markdown artifact and the counts table."""
    night = Night.of(run)
    description = f"{night.language} · {night.source} · {night.date}: {counts_message(summary)}"
    await acreate_table_artifact(table=_count_rows(summary), key=SUMMARY_KEY, description=title)
    in_doubt = await asyncio.to_thread(count_in_doubt, run.store)
    items, open_total = await asyncio.to_thread(
        open_backlog,
        run.store,
        language=run.claim_language,
        source_prefix=run.source_prefix,
        limit=ROWS_MAX,
    )
    markdown = night_report(
        summary,
        title=title,
        night=night,
        items=items,
        open_total=open_total,
        roots=run.source_roots,
        in_doubt=in_doubt,
        store=run.settings.storage.database_url_redacted,
    )
    await acreate_markdown_artifact(markdown=markdown, key=night.key, description=description)


def count_in_doubt(store: UnitOfWorkFactory) -> int:
    """Deliveries in doubt in the store, read in one transaction."""
    with store.unit_of_work(read_only=True) as uow:
        return in_doubt_rows(uow)


def _count_rows(summary: RunSummary) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"metric": name, "value": value} for name, value in summary.rows()
    ]
    rows += [
        {"metric": f"{row.status}: {row.recording}", "value": row.reason}
        for row in summary.to_check
    ]
    return rows


def night_report(
    summary: RunSummary,
    *,
    title: str,
    night: Night,
    items: Sequence[ItemRecord],
    open_total: int,
    roots: Sequence[str],
    in_doubt: int = 0,
    store: str = "",
) -> str:
    """The markdown a person reads: headline, deliveries in doubt, then the open recordings
    table. What is still open in the store shows every night until a person resolves it."""
    lines = [f"# {title}: {night.date}", "", f"**{_verdict(summary)}**", ""]
    lines += ["| | |", "|---|---|"]
    lines += [f"| {label} | {value} |" for label, value in _headline(summary, night)]
    if in_doubt:
        lines += [
            "",
            f"## Deliveries in doubt ({in_doubt})",
            "",
            "Sent, but no answer was recorded: the note may be in the patient record already. "
            "Check the record, then `medasr deliver --resend-in-doubt` for the missing ones.",
        ]
    lines += ["", f"## Recordings to check ({open_total} open in the store for {night.language})"]
    if not items:
        lines += ["", "Nothing to check."]
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "| Recording | Status | Kind | Retryable | Reason | Fix | Language |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [_item_row(item, roots=roots) for item in items]
    if store:  # a worker's store is not the operator's shell default
        lines += ["", f"The fix commands apply to the store `MEDASR_DATABASE_URL={store}`."]
    if open_total > len(items):
        lines += ["", f"… and more: `medasr status --failures {open_total}` lists them all."]
    return "\n".join(lines) + "\n"


def _verdict(summary: RunSummary) -> str:
    if summary.stopped is not None:
        return f"Stopped ({summary.stopped.value.replace('_', ' ')}): {summary.stop_message}"
    if summary.exit_code == 0:
        return f"Everything asked for is done: {counts_message(summary)}"
    return f"Recordings to check: {counts_message(summary)}"


def _review_queue(summary: RunSummary) -> list[tuple[str, str]]:
    """The queue a person works through, when every transcript waits for one."""
    rows = []
    if summary.review_waiting is not None:
        oldest = "" if summary.review_oldest_h is None else f" (oldest {summary.review_oldest_h} h)"
        rows.append(("Waiting for a reviewer", f"{summary.review_waiting}{oldest}"))
    if summary.reviewed_notes is not None:
        reviewed = (
            f"{summary.reviewed_notes} note(s), {summary.reviewed_words} words, "
            f"word accuracy {summary.reviewed_accuracy}"
        )
        rows.append(("Reviewed in the last 24 h", reviewed))
    if summary.review_held:
        held = ", ".join(f"{key} {count}" for key, count in summary.review_held)
        rows.append(("Held for review by this run, by reason", held))
    return rows


def _headline(summary: RunSummary, night: Night) -> list[tuple[str, str]]:
    return [
        ("Language", night.language),
        ("Source", _cell(night.source)),
        ("Audio hours transcribed", f"{summary.audio_hours_done:.2f}"),
        ("Recordings transcribed", str(summary.files_done)),
        ("Recordings to check", str(summary.to_check_total)),
        ("Failed", str(summary.failed_total)),
        ("Held for review", str(summary.files_needs_review)),
        *_review_queue(summary),
        ("Skipped as silent", str(summary.files_skipped)),
        ("Requests sent", str(summary.requests)),
        ("Retries", str(summary.retries)),
        ("Time taken", f"{summary.wall_s:.1f} s"),
        ("Exit code", str(summary.exit_code)),
        *_budget(summary),
        *_languages(summary),
    ]


def _languages(summary: RunSummary) -> list[tuple[str, str]]:
    """A mixed archive's run, language by language."""
    return [
        (f"Language {language}", f"{done} done, {to_check} to check")
        for language, done, to_check in summary.by_language
    ]


def _budget(summary: RunSummary) -> list[tuple[str, str]]:
    """The audio cap, when it stopped the claims."""
    message = summary.budget_message
    return [] if message is None else [("Audio budget", message)]


def _item_row(item: ItemRecord, *, roots: Sequence[str]) -> str:
    name = recording_name(item.source_uri, roots=roots)
    if item.status == ItemStatus.NEEDS_REVIEW:
        kind, retryable = "needs_review", "no"
        reason = "held for review: " + (", ".join(item.flags) or "quality gate")
    else:
        kind = item.error_kind or "-"
        retryable = "yes" if item.retryable else "no"
        reason = reason_about(item.error_message, uri=item.source_uri, roots=roots) or "-"
    # Language last: readers of the columns before it keep their places.
    cells = [name, item.status, kind, retryable, reason, fix_command(item), item.language]
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def fix_command(item: ItemRecord) -> str:
    """The command that resolves an open item, in backticks."""
    language = f"--language {item.language}"
    if item.status == ItemStatus.NEEDS_REVIEW:
        return f"`medasr review --accept {item.id}` (or `--resend {item.id}`)"
    if item.status == ItemStatus.SKIPPED:
        return f"`medasr rerun-failures --include-skipped {language}`"
    if item.retryable:
        return f"`medasr rerun-failures {language}`"
    return f"fix the file, then `medasr rerun-failures --include-permanent {language}`"


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped, at most 300 characters."""
    shown = one_line(text).replace("|", "\\|")
    return shown if len(shown) <= 300 else shown[:299] + "…"
