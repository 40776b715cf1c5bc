"""The trail as a person or a tool reads it: a table, JSON lines or CSV, one event a row.

Events hold no transcript text, but paths and actors come from outside: every cell is
put on one line (control characters escaped) and CSV cells a spreadsheet would run as a
formula are neutralised as the exports are (storage/export.py, OWASP's CSV injection
rule).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, TextIO

from storage.audit_records import AuditEvent
from storage.export import neutralise_cell

COLUMNS = ("seq", "time", "actor", "action", "item_id", "path", "target", "detail", "hash")


class TrailFormat(StrEnum):
    """What `medasr audit` prints."""

    table = "table"
    jsonl = "jsonl"
    csv = "csv"


def event_record(event: AuditEvent) -> dict[str, Any]:
    """One event as a JSON-ready dict in COLUMNS order (time in ISO 8601, UTC)."""
    return {
        "seq": event.seq,
        "time": event.occurred_at.isoformat(timespec="microseconds"),
        "actor": event.actor,
        "action": event.action,
        "item_id": event.item_id,
        "path": event.path,
        "target": event.target,
        "detail": dict(event.detail) if event.detail else None,
        "hash": event.hash,
    }


def write_events(events: Iterable[AuditEvent], out: TextIO, *, trail_format: TrailFormat) -> int:
    """Write the events to `out` in `trail_format`; returns how many."""
    if trail_format is TrailFormat.jsonl:
        return _write_jsonl(events, out)
    if trail_format is TrailFormat.csv:
        return _write_csv(events, out)
    return _write_table(events, out)


def _write_jsonl(events: Iterable[AuditEvent], out: TextIO) -> int:
    count = 0
    for event in events:
        out.write(json.dumps(event_record(event), ensure_ascii=False) + "\n")
        count += 1
    return count


def _write_csv(events: Iterable[AuditEvent], out: TextIO) -> int:
    writer = csv.DictWriter(
        out, fieldnames=COLUMNS, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n"
    )
    writer.writeheader()
    count = 0
    for event in events:
        record = event_record(event)
        record["detail"] = _detail_text(event)
        writer.writerow(
            {
                k: neutralise_cell(v) if isinstance(v, str) else ("" if v is None else v)
                for k, v in record.items()
            }
        )
        count += 1
    return count


def _write_table(events: Iterable[AuditEvent], out: TextIO) -> int:
    out.write("\t".join(COLUMNS[:-1]) + "\n")
    count = 0
    for event in events:
        record = event_record(event)
        record["detail"] = _detail_text(event)
        cells = [_one_line(record[name]) for name in COLUMNS[:-1]]
        out.write("\t".join(cells) + "\n")
        count += 1
    return count


def _detail_text(event: AuditEvent) -> str:
    if not event.detail:
        return ""
    return ",".join(f"{key}={value}" for key, value in sorted(event.detail.items()))


def _one_line(value: Any) -> str:
    if value is None:
        return ""
    text = str(value)
    return "".join(ch if ch.isprintable() and ch != "\t" else f"\\x{ord(ch):02x}" for ch in text)
