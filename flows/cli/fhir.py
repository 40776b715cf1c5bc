"""`medasr export --format fhir`: the command-line side of tasks/delivery/fhir_export.py."""

from __future__ import annotations

from pathlib import Path

import typer

from config.errors import ConfigError
from config.settings import load_settings
from storage.interface import UnitOfWorkFactory
from tasks.delivery.fhir_export import write_fhir_bundle


def export_fhir(
    store: UnitOfWorkFactory,
    out: Path,
    *,
    status: str | None,
    language: str | None = None,
    force: bool = False,
) -> int:
    """Write the Bundle to `out` (a file); returns the documents written.

    Raises ConfigError, ExportRefused (a link or someone's file at `out`), OSError.
    """
    if out.is_dir():
        raise ConfigError(f"--out {out} is a folder; give a file name for --format fhir")
    note_code = load_settings().delivery.note_loinc_code
    written, invalid = write_fhir_bundle(
        store, out, status=status, note_code=note_code, language=language, force=force
    )
    if invalid:
        typer.echo(
            f"medasr: {invalid} recording(s) left out: their FHIR document is not valid "
            "(see the log; check the manifest's values)",
            err=True,
        )
    return written
