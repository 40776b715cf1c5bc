"""`medasr export`: the store's items written out as jsonl or csv rows, a tree of .txt
transcripts, or a FHIR R4 Bundle.

Files are 0600 in 0700 folders and never written through a link; a refused file is a
line on stderr and exit code 1 (the rest is still written). Every export is an audited
`exported` event; when the store cannot take it, the files the export wrote are removed.
Rows name recordings by their path relative to the source of a recorded run.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from audit import AuditAction, command_actor, record_event
from config.errors import EXIT_SOME_FAILED, ConfigError
from config.settings import StorageSettings, load_settings
from flows.cli.console import print_store
from flows.cli.error_exits import command_errors
from service.contract import is_supported_language
from storage import open_store
from storage.database import database_exists
from storage.errors import ExportRefused, StoreError
from storage.export import (
    TreeResult,
    common_local_root,
    write_csv,
    write_jsonl,
    write_txt_tree,
)
from storage.export_rollback import Snapshot, files_under, remove_written
from storage.interface import UnitOfWork, UnitOfWorkFactory
from storage.records import ITEM_STATUSES, ExportRow, ItemStatus
from tasks.discovery.recording_names import one_line, reason_about, recording_name


class ExportFormat(StrEnum):
    """What `medasr export` writes."""

    jsonl = "jsonl"
    csv = "csv"
    txt = "txt"
    fhir = "fhir"


@dataclass(frozen=True)
class _Selection:
    """Which items an export takes: a status and a language, each or both None (any)."""

    status: str | None
    language: str | None


def export_command(
    export_format: Annotated[
        ExportFormat, typer.Option("--format", help="jsonl, csv, txt or fhir (an R4 Bundle).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Output file (jsonl, csv) or folder (txt).")],
    status: Annotated[
        str | None,
        typer.Option("--status", help="Only items with this status (txt: done unless given)."),
    ] = None,
    language: Annotated[
        str | None, typer.Option("--language", "-l", help="Only items in this language.")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace files an earlier export did not leave (never a link or a folder).",
        ),
    ] = False,
) -> None:
    """Export items: jsonl or csv rows, one .txt transcript per source in a tree, or a FHIR
    R4 Bundle (fhir).

    A .txt file carries no state: txt writes only final transcripts (status done) unless
    --status asks for another. Files are 0600 in 0700 folders and never written through a
    link; a refused file is a line on stderr and exit code 1 (the rest is still written).
    """
    with command_errors():
        _require_named_out(out, export_format)
        selection = _selection(export_format, status=status, language=language)
        storage = load_settings().storage
        written, refused = _export_audited(storage, export_format, out, selection, force=force)
    refusals = f"; {refused} refused (above)" if refused else ""
    typer.echo(f"exported {written} item(s) to {one_line(str(out))}{refusals}", err=True)
    print_store(storage.store_location, err=True)
    if refused:
        raise typer.Exit(EXIT_SOME_FAILED)


def _require_named_out(out: Path, export_format: ExportFormat) -> None:
    """ConfigError for `--out -`: a person reads it as standard output, and transcripts go
    only to a file its owner alone can read (audited by its path)."""
    if str(out) == "-":
        what = "file or folder" if export_format is ExportFormat.txt else "file"
        raise ConfigError(
            "--out - (standard output) is not supported: transcripts are written to a file "
            f"only its owner can read; name a {what}"
        )


def _selection(
    export_format: ExportFormat, *, status: str | None, language: str | None
) -> _Selection:
    """The items asked for; raises ConfigError for an unknown status or language."""
    if status is not None and status not in ITEM_STATUSES:
        raise ConfigError(f"--status must be one of {', '.join(ITEM_STATUSES)} (got {status!r})")
    if language is not None and not is_supported_language(language):
        raise ConfigError(f"--language must be one the service takes (got {language[:16]!r})")
    if status is None and export_format is ExportFormat.txt:
        status = ItemStatus.DONE  # a .txt file carries no state: only what is final
    return _Selection(status=status, language=language)


def _export_audited(
    storage: StorageSettings,
    export_format: ExportFormat,
    out: Path,
    selection: _Selection,
    *,
    force: bool,
) -> tuple[int, int]:
    """(items written, files refused), the export's event recorded; raises ConfigError,
    ExportRefused, StoreError."""
    if not database_exists(storage.database_url):
        raise ConfigError(f"no database at {storage.database_url_redacted}: nothing to export")
    store = open_store(storage)
    try:
        before = files_under(out)
        written, refused = _export(store, export_format, out, selection, force=force)
        detail: dict[str, str | int] = {
            "format": export_format.value,
            "records": written,
            "refused": refused,
            "status": selection.status or "any",
            "language": selection.language or "any",
        }
        _record_exported(store, out, detail=detail, before=before)
    except ExportRefused as exc:
        raise ExportRefused(f"not written: {out}: {exc.message}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot write {out}: {exc.strerror or exc}") from exc
    finally:
        store.dispose()
    return written, refused


def _record_exported(
    store: UnitOfWorkFactory, out: Path, *, detail: dict[str, str | int], before: Snapshot
) -> None:
    """The `exported` event (PHI left medasr: who, where, how many); when the store
    cannot take it, the files this export wrote are removed: no export without its event."""
    try:
        with store.unit_of_work() as uow:
            record_event(
                uow,
                action=AuditAction.EXPORTED,
                actor=command_actor(),
                target=str(out.absolute()),
                detail=detail,
            )
    except StoreError as exc:
        removed = remove_written(out, before=before)
        exc.message = (
            f"{exc.message}; the export's audit event could not be written, so the "
            f"{removed} file(s) it wrote were removed: export again once the store answers"
        )
        raise


def _export(
    store: UnitOfWorkFactory,
    export_format: ExportFormat,
    out: Path,
    selection: _Selection,
    *,
    force: bool,
) -> tuple[int, int]:
    """(items written, files refused). Raises ConfigError, ExportRefused, OSError."""
    status, language = selection.status, selection.language
    if export_format is ExportFormat.fhir:
        from flows.cli.fhir import export_fhir  # httpx and the FHIR models: fhir only

        return export_fhir(store, out, status=status, language=language, force=force), 0
    if export_format is ExportFormat.txt:
        return _export_txt(store, out, selection, force=force)
    if out.is_dir():
        raise ConfigError(
            f"--out {out} is a folder; give a file name for --format {export_format.value}"
        )
    with store.unit_of_work(read_only=True) as uow:
        roots = uow.runs.run_sources()
        rows = uow.item_queries.export_rows(status=status, language=language)
        rows_iter = _named_rows(rows, roots=roots)
        if export_format is ExportFormat.jsonl:
            return write_jsonl(rows_iter, out, force=force), 0
        return write_csv(rows_iter, out, force=force), 0


def _export_txt(
    store: UnitOfWorkFactory, out: Path, selection: _Selection, *, force: bool
) -> tuple[int, int]:
    """One .txt file per recording in a tree under `out`: (written, refused)."""
    status, language = selection.status, selection.language
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} must be a folder for --format txt")
    with store.unit_of_work(read_only=True) as uow:
        # The layout follows every item, not only those exported, so it is stable.
        root = common_local_root(uow.item_queries.source_uris())
        rows = uow.item_queries.export_rows(status=status, language=language)
        keys = uow.item_queries.export_keys()
        result = write_txt_tree(rows, out, local_root=root, force=force, keys=keys)
        roots = uow.runs.run_sources()
        waiting = _count_waiting(uow) if status == ItemStatus.DONE else 0
    _print_refusals(result, roots=roots)
    if waiting:
        typer.echo(f"medasr: {waiting} waiting for review not exported (machine text: "
                   "--status needs_review exports them)", err=True)  # fmt: skip
    return result.written, len(result.refused)


def _count_waiting(uow: UnitOfWork) -> int:
    """Recordings whose text waits for a person (machine text, not final)."""
    counts = uow.item_queries.status_counts()
    return sum(c.items for c in counts if c.status == ItemStatus.NEEDS_REVIEW)


def _named_rows(rows: Iterable[ExportRow], *, roots: list[str]) -> Iterator[ExportRow]:
    """Rows as a person reads them: `source` and the path in `error_message` relative to
    the run source holding them; the full URI kept in `source_uri`."""
    for row in rows:
        uri = row.source
        yield replace(
            row,
            source=recording_name(uri, roots=roots),
            source_uri=uri,
            error_message=reason_about(row.error_message, uri=uri, roots=roots) or None,
        )


def _print_refusals(result: TreeResult, *, roots: list[str]) -> None:
    """One line on stderr per transcript not written: the recording, its file, why."""
    for refusal in result.refused:
        name = recording_name(refusal.source, roots=roots)
        target = one_line(refusal.target.as_posix())
        typer.echo(f"medasr: not written: {target} ({name}): {one_line(refusal.reason)}", err=True)
