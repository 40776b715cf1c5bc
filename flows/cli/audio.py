"""`medasr split`: one recording to 16 kHz mono WAV chunks under a byte cap, cut at pauses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from config.errors import EXIT_INTERRUPTED, EXIT_SOME_FAILED, EXIT_USAGE
from service.contract import SERVICE_MAX_UPLOAD_BYTES
from tasks.audio import WAV_HEADER_BYTES, SplitResult, split_to_dir
from tasks.errors import AudioError, AudioNotFound, DecoderInterrupted

_MIN_MAX_BYTES = WAV_HEADER_BYTES + 2 * 16_000  # one second of 16 kHz mono s16
_MAX_MAX_BYTES = 100_000_000  # as MEDASR_MAX_UPLOAD_BYTES: past it a chunk buffer is absurd


def split_command(
    input_path: Annotated[
        Path, typer.Argument(metavar="INPUT", help="Recording to split (wav, mp3, m4a, ...).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Directory for chunk-0001.wav, ... (created 0700; old chunk-NNNN.wav removed).",
        ),
    ],
    max_bytes: Annotated[
        int,
        typer.Option(
            "--max-bytes",
            min=_MIN_MAX_BYTES,
            max=_MAX_MAX_BYTES,
            help="Largest chunk, WAV header included.",
        ),
    ] = SERVICE_MAX_UPLOAD_BYTES,
    min_pause_ms: Annotated[
        int, typer.Option("--min-pause-ms", min=20, max=5000, help="Shortest pause to cut in.")
    ] = 250,
) -> None:
    """Split one recording into chunks; print one JSON line per chunk."""
    try:
        result = split_to_dir(input_path, out, max_bytes=max_bytes, min_pause_ms=min_pause_ms)
    except (KeyboardInterrupt, DecoderInterrupted):
        typer.echo(
            f"medasr: interrupted: the chunks written to {out} were removed; run the same "
            "command again",
            err=True,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except AudioNotFound as exc:
        # INPUT names nothing at all: the command was mistyped (usage). A directory or an
        # unreadable file is there but is not audio we can read: exit 1 as other bad input.
        if input_path.exists() or input_path.is_symlink():
            typer.echo(f"medasr: {exc}", err=True)
            raise typer.Exit(EXIT_SOME_FAILED) from exc
        typer.echo(f"medasr: usage error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from exc
    except AudioError as exc:
        typer.echo(f"medasr: {exc}", err=True)
        raise typer.Exit(EXIT_SOME_FAILED) from exc
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        typer.echo(f"medasr: cannot write chunks to {out}: {reason}", err=True)
        raise typer.Exit(EXIT_SOME_FAILED) from exc
    _report(result, out=out)


def _report(result: SplitResult, *, out: Path) -> None:
    """The stale-chunk note on stderr, then one JSON line per chunk on stdout."""
    if result.stale_removed:
        typer.echo(
            f"medasr: removed {result.stale_removed} chunk file(s) of an earlier split from {out}",
            err=True,
        )
    for item in result.files:
        record = {
            "index": item.index,
            "path": str(item.path),
            "start_ms": item.start_ms,
            "end_ms": item.end_ms,
            "bytes": item.bytes,
        }
        typer.echo(json.dumps(record))
