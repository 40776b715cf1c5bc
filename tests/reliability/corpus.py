"""Recordings for the reliability parts: short tone dictations whose text is known exactly.

Each file holds a distinct sentence ("case 17. stable.", 2-3 s), so every chunk has
distinct audio (a distinct sha256 in the ledger) and "done exactly once" can also be
checked as "text == the sentence".
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from devserver.tone import encode_tone_dictation
from tests.recordings import write_tone_wav

WORDS = (
    "stable", "afebrile", "resting", "improving", "reviewed", "ambulant", "comfortable",
    "alert", "eating", "sleeping", "mobile", "settled",
)  # fmt: skip


def sentence(index: int, *, rng: random.Random) -> str:
    """A distinct short dictation for file `index` (about 2.5 s as tone dictation)."""
    return f"case {index}. {rng.choice(WORDS)}."


def write_tone_corpus(root: Path, count: int, *, seed: int, prefix: str = "") -> dict[Path, str]:
    """`count` WAV files under `root` (in a few folders); returns path -> expected text."""
    rng = random.Random(seed)
    texts = {}
    for index in range(count):
        path = root / f"ward-{index % 4}" / f"{prefix}dictation-{index:04d}.wav"
        texts[path] = sentence(index, rng=rng)
        write_tone_wav(path, texts[path])
    age_files(root)
    return texts


def age_files(root: Path, *, seconds: float = 120) -> None:
    """Date every file under `root` back, so the scan does not take it for one being written."""
    age_paths([p for p in root.rglob("*") if p.is_file() and not p.is_symlink()], seconds=seconds)


def age_paths(paths: Iterable[Path], *, seconds: float = 120) -> None:
    """Date these files back (see age_files)."""
    past = time.time() - seconds
    for path in paths:
        os.utime(path, (past, past))


def tone_samples(text: str, *, sample_rate_hz: int) -> np.ndarray:
    """int16 mono samples of `text`."""
    return encode_tone_dictation(text, sample_rate_hz=sample_rate_hz)


def store_done_notes(medasr: Any, database_url: str, texts: dict[str, str]) -> None:
    """The store at `database_url` migrated by `medasr db upgrade` (the command's own
    schema), then `texts` (source path -> text) as done transcripts."""
    from config.settings import StorageSettings
    from storage import open_store
    from tests.tasks.delivery.delivery_helpers import make_done

    assert medasr.run("db", "upgrade").returncode == 0
    store = open_store(StorageSettings(database_url=database_url))
    try:
        make_done(store, texts)
    finally:
        store.dispose()
