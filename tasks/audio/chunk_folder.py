"""`medasr split`'s folder: chunk-NNNN.wav files written, and an earlier split's removed.

Only chunks split itself wrote are removed: a file of that name whose header is not the
16 kHz mono chunk header for its size is someone's, and the split is refused with the
folder as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from config.private_files import make_private_folders, write_private_file
from service.contract import chunk_filename
from tasks.audio.ffmpeg import OUTPUT_SAMPLE_RATE_HZ
from tasks.audio.riff import WAV_HEADER_BYTES, wav_header
from tasks.audio.splitter import iter_chunks
from tasks.errors import AudioError, ChunkFolderTaken

_CHUNK_NAME = re.compile(r"chunk-[0-9]{4}\.wav")  # chunk_filename's form; nothing else is ours


@dataclass(frozen=True)
class ChunkFile:
    """A chunk written by `split_to_dir`."""

    index: int
    path: Path
    start_ms: int
    end_ms: int
    bytes: int


@dataclass(frozen=True)
class SplitResult:
    """What `split_to_dir` did: the chunks written, and how many stale ones it deleted."""

    files: list[ChunkFile]
    stale_removed: int  # chunk-NNNN.wav files of an earlier split


def split_to_dir(
    path: Path, out_dir: Path, *, max_bytes: int, min_pause_ms: int = 250
) -> SplitResult:
    """Write chunk-0001.wav, ... (0600) into `out_dir` (made 0700 if missing) at the first chunk.

    The chunk-NNNN.wav files of an earlier split are deleted first, nothing else in the
    folder is touched. Raises AudioError subclasses or OSError; on any error the chunk
    files written so far are removed.
    """
    written: list[ChunkFile] = []
    stale = 0
    try:
        for chunk in iter_chunks(path, max_bytes=max_bytes, min_pause_ms=min_pause_ms):
            if chunk.index == 1:
                # Only once the input is known to decode: bad input leaves the folder as it was.
                make_private_folders(out_dir)
                stale = remove_stale_chunks(out_dir)
            target = out_dir / chunk_filename(chunk.index)
            write_private_file(target, chunk.wav)
            written.append(
                ChunkFile(chunk.index, target, chunk.start_ms, chunk.end_ms, len(chunk.wav))
            )
    except (AudioError, OSError):
        for item in written:
            item.path.unlink(missing_ok=True)
        raise
    return SplitResult(files=written, stale_removed=stale)


def remove_stale_chunks(folder: Path) -> int:
    """Delete the chunk-NNNN.wav files (exactly that name form) of an earlier split in
    `folder`; the count. Raises ChunkFolderTaken, having deleted nothing, when any such
    file is not one split wrote (its header is not a 16 kHz mono chunk's)."""
    stale = [e for e in folder.iterdir() if _CHUNK_NAME.fullmatch(e.name) and not e.is_dir()]
    foreign = sorted(entry.name for entry in stale if not _written_by_split(entry))
    if foreign:
        raise ChunkFolderTaken(
            f"{folder} holds {', '.join(foreign[:3])}{', ...' if len(foreign) > 3 else ''}, "
            "which `medasr split` did not write; nothing was removed: give --out an empty "
            "folder or one an earlier split wrote"
        )
    for entry in stale:
        entry.unlink(missing_ok=True)
    return len(stale)


def _written_by_split(path: Path) -> bool:
    """True when `path` starts with the header split writes for its size (16 kHz mono
    s16, the samples to the end)."""
    try:
        size_bytes = path.stat().st_size
        with path.open("rb") as file:
            head = file.read(WAV_HEADER_BYTES)
    except OSError:
        return False
    data_bytes = size_bytes - WAV_HEADER_BYTES
    return data_bytes >= 0 and head == wav_header(
        data_bytes=data_bytes, rate_hz=OUTPUT_SAMPLE_RATE_HZ
    )
