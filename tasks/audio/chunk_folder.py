"""`medasr split`'s folder: chunk-NNNN.wav files written, and an earlier split's removed.

Only chunks split itself wrote are removed: a file of that name whose header is not the
16 kHz mono chunk header for its size is someone's, and the split is refused with the
folder as it was.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from config.private_files import make_private_folders, write_private_file
from service.contract import chunk_filename
from tasks.audio.ffmpeg import OUTPUT_SAMPLE_RATE_HZ
from tasks.audio.riff import WAV_HEADER_BYTES, wav_header
from tasks.audio.splitter import iter_chunks
from tasks.errors import ChunkFolderTaken

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
    folder is touched. Raises AudioError subclasses, ChunkFolderTaken or OSError; on any
    error, or an interruption, the chunk files written so far are removed.
    """
    written: list[ChunkFile] = []
    stale = 0
    target: Path | None = None
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
    except BaseException as exc:  # an error, or Ctrl-C: no chunk of it is left half-made
        made = [item.path for item in written]
        if target is not None and not isinstance(exc, FileExistsError):  # not someone's
            made.append(target)
        for made_path in made:
            made_path.unlink(missing_ok=True)
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
    """True when `path` is a chunk split writes: its 44-byte 16 kHz mono s16 header (the
    sizes aside) with no more samples than it declares, or nothing yet (a split killed
    while it wrote that chunk)."""
    try:
        size_bytes = path.stat().st_size
        with path.open("rb") as file:
            head = file.read(WAV_HEADER_BYTES)
    except OSError:
        return False
    if size_bytes == 0:
        return True
    if len(head) < WAV_HEADER_BYTES:
        return False
    declared = wav_header(data_bytes=0, rate_hz=OUTPUT_SAMPLE_RATE_HZ)
    same_format = head[8:40] == declared[8:40] and head[:4] == declared[:4]  # sizes aside
    (declared_data_bytes,) = struct.unpack_from("<I", head, 40)
    return same_format and size_bytes - WAV_HEADER_BYTES <= declared_data_bytes
