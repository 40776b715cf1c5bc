"""Quality figures as a person or a tool reads them: a table, JSON lines or CSV.

Group names come from outside (manifest columns, reviewers' names) and correction pairs
from transcripts: every cell is put on one line (control characters escaped) and CSV
cells a spreadsheet would run as a formula are neutralised as the exports are
(storage/export.py, OWASP's CSV injection rule).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, TextIO

from storage.export import neutralise_cell
from tasks.discovery.recording_names import one_line
from tasks.review.corrections import Correction
from tasks.review.group_quality import GroupQuality

GROUP_COLUMNS = (
    "group", "notes", "words", "accuracy", "ci_low", "ci_high", "substitutions", "deletions",
    "insertions", "changed_share", "previous_accuracy", "change",
)  # fmt: skip
CORRECTION_COLUMNS = ("group", "machine_words", "final_words", "notes", "authors")


class QualityFormat(StrEnum):
    """What `medasr quality` prints."""

    table = "table"
    jsonl = "jsonl"
    csv = "csv"


def group_record(group: GroupQuality) -> dict[str, Any]:
    """One group as a JSON-ready dict in GROUP_COLUMNS order (shares as fractions)."""
    return {
        "group": group.group,
        "notes": group.notes,
        "words": group.words,
        "accuracy": _rounded(group.accuracy),
        "ci_low": _rounded(group.ci_low),
        "ci_high": _rounded(group.ci_high),
        "substitutions": group.substitutions,
        "deletions": group.deletions,
        "insertions": group.insertions,
        "changed_share": _rounded(group.changed_share),
        "previous_accuracy": _rounded(group.previous_accuracy),
        "change": _rounded(group.change),
    }


def correction_record(correction: Correction) -> dict[str, Any]:
    """One recurring substitution as a JSON-ready dict in CORRECTION_COLUMNS order."""
    return {
        "group": correction.group,
        "machine_words": correction.machine_words,
        "final_words": correction.final_words,
        "notes": correction.notes,
        "authors": correction.authors,
    }


def write_records(
    records: Sequence[dict[str, Any]],
    out: TextIO,
    *,
    columns: Sequence[str],
    quality_format: QualityFormat,
) -> int:
    """Write the records to `out` in `quality_format`; returns how many."""
    if quality_format is QualityFormat.jsonl:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    elif quality_format is QualityFormat.csv:
        writer = csv.DictWriter(
            out, fieldnames=columns, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n"
        )
        writer.writeheader()
        for record in records:
            writer.writerow({k: _csv_cell(v) for k, v in record.items()})
    else:
        out.write("\t".join(columns) + "\n")
        for record in records:
            out.write("\t".join(_table_cell(record[column]) for column in columns) + "\n")
    return len(records)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _csv_cell(value: Any) -> Any:
    if isinstance(value, str):
        return neutralise_cell(one_line(value))
    return "" if value is None else value


def _table_cell(value: Any) -> str:
    if value is None:
        return ""
    return one_line(value) if isinstance(value, str) else str(value)
