"""Provoked vs caught: the quality gate measured on the devserver's text faults.

    .venv/bin/python -m tests.reliability.quality_measure   # prints the table (~1-2 min)

The corpus is every recording the test suite transcribes as clean input: samples/
(four tone dictations, a silent and a corrupt file), the reliability suite's short tone
dictations, and a six-minute noisy tone dictation (with hum, 25 dB SNR) as WAV and mp3.
Each run goes through the real pipeline (transcribe_file: ffmpeg, splitting, the
client) against a real devserver with one text fault at a time. A chunk is *provoked*
when the devserver's ledger says it spoiled that chunk's answer (matched by the audio's
sha256); *caught* when the gate flagged that chunk with the fault's flag. A recording
is provoked when any of its chunks was, caught when it ended needs_review with the
flag. A *false flag* is any flag on a recording none of whose chunks was spoiled; flags other
than the fault's own on a spoiled recording are counted apart ("other flags").
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile

from config.settings import PipelineSettings, StorageSettings
from devserver import DevServerConfig, RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from service.client import TranscriptionClient
from storage import open_store
from storage.interface import UnitOfWorkFactory
from storage.records import ItemRecord
from storage.sources import list_audio
from tasks.audio import iter_chunks
from tasks.errors import AudioError
from tasks.throttle.gate import RequestGate
from tasks.transcription.file_run import BatchContext, process_batch
from tests.helpers.audio import add_noise_and_hum, dictation_text, ffmpeg
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.servers import DEVSERVER_TOKEN, client_settings

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
LANGUAGE = "en-IN"
FAULT_FLAGS = {
    "p_empty": "empty_text",
    "p_repeat": "repetition",
    "p_wrong_script": "script_mismatch",
}
TEXT_FAULT_OF = {"p_empty": "empty", "p_repeat": "repeat", "p_wrong_script": "wrong_script"}
# ~7 s chunks: many chunks (many fault draws) per recording; the default cap is measured too.
SMALL_CAP_BYTES = 224_000
DEFAULT_CAP_BYTES = 5_000_000


@dataclass
class Tally:
    """Counts of one run over the corpus."""

    recordings: int = 0  # transcribed (done or needs_review)
    chunks: int = 0  # answered by the service
    provoked_chunks: int = 0
    caught_chunks: int = 0
    provoked_recordings: int = 0
    caught_recordings: int = 0
    false_flags: int = 0  # flags on recordings without a spoiled answer
    other_flags: dict[str, int] = field(default_factory=dict)  # on spoiled recordings
    false_examples: list[str] = field(default_factory=list)


def build_corpus(root: Path) -> Path:
    """Write the corpus under `root` (see the module docstring); returns `root`."""
    shutil.copytree(SAMPLES, root / "samples", ignore=shutil.ignore_patterns("*.py"))
    write_tone_corpus(root / "short", 40, seed=7)
    text = _dictation_text(words=480)
    clean = encode_tone_dictation(text, sample_rate_hz=22_050).astype(np.float32) / 32768
    noisy = _noise_and_hum(clean, sample_rate_hz=22_050)
    (root / "long").mkdir()
    soundfile.write(root / "long" / "dictation.wav", noisy, 22_050, subtype="PCM_16")
    ffmpeg("-i", str(root / "long" / "dictation.wav"), "-c:a", "libmp3lame", "-b:a", "64k",
           str(root / "long" / "dictation.mp3"))  # fmt: skip
    age_files(root)
    return root


def _dictation_text(*, words: int) -> str:
    return dictation_text(words=words)


def _noise_and_hum(signal: np.ndarray, *, sample_rate_hz: int) -> np.ndarray:
    return add_noise_and_hum(signal, sample_rate_hz=sample_rate_hz, snr_db=25)


def measure(
    corpus: Path, *, faults: dict[str, float], cap_bytes: int = SMALL_CAP_BYTES, seed: int = 1
) -> Tally:
    """Transcribe `corpus` on a devserver with `faults` (p_* rates) and count (see module)."""
    with tempfile.TemporaryDirectory() as scratch, _devserver(faults, seed=seed) as server:
        store = open_store(StorageSettings(database_url=f"sqlite:///{scratch}/m.db"))
        try:
            uris = asyncio.run(_transcribe_all(store, server, corpus, cap_bytes=cap_bytes))
            with store.unit_of_work(read_only=True) as uow:
                items = uow.item_queries.find_items(source_uris=uris, language=LANGUAGE).values()
        finally:
            store.dispose()
        finished = [i for i in items if i.status in ("done", "needs_review")]
        spoiled = _spoiled_chunks(server, finished, cap_bytes=cap_bytes)
        return _tally(finished, spoiled, flag=_target_flag(faults), answered=_answers(server))


@contextmanager
def _devserver(faults: dict[str, float], *, seed: int) -> Iterator[RunningDevServer]:
    config = DevServerConfig(port=0, token=DEVSERVER_TOKEN, seed=seed, **faults)
    with start_devserver(config) as server:
        yield server


async def _transcribe_all(
    store: UnitOfWorkFactory, server: RunningDevServer, root: Path, *, cap_bytes: int
) -> list[str]:
    """Register and transcribe every recording under `root`; returns their URIs."""
    files = list_audio(str(root), settle_s=0).files
    settings = client_settings(server, max_upload_bytes=cap_bytes)
    async with TranscriptionClient(*settings) as client:
        ctx = BatchContext(
            pipeline=PipelineSettings(settle_s=0),
            store=store,
            client=client,
            gate=RequestGate(concurrency=4),
            owner="measure",
            lease_s=600,
        )
        try:
            with store.unit_of_work() as uow:
                uow.items.register_items(files, language=LANGUAGE)
            while True:
                with store.unit_of_work() as uow:
                    batch = uow.claims.claim_batch(
                        owner="measure", language=LANGUAGE, limit=8, lease_s=600
                    )
                if not batch:
                    break
                await process_batch(batch, ctx=ctx)
        finally:
            ctx.close()
    return [f.uri for f in files]


def _answers(server: RunningDevServer) -> int:
    return sum(1 for entry in server.ledger.entries() if entry.status == 200)


def _spoiled_chunks(
    server: RunningDevServer, items: list[ItemRecord], *, cap_bytes: int
) -> dict[tuple[int, int], str]:
    """(item id, chunk index) -> text fault, from the ledger's sha256 of each answered chunk."""
    by_sha = {e.sha256: e.text_fault for e in server.ledger.entries() if e.text_fault}
    if not by_sha:
        return {}
    client_cap = TranscriptionClient(*client_settings(server, max_upload_bytes=cap_bytes))
    max_wav = client_cap.max_wav_bytes
    spoiled = {}
    for item in items:
        try:
            for chunk in iter_chunks(Path(item.source_uri), max_bytes=max_wav):
                fault = by_sha.get(hashlib.sha256(chunk.wav).hexdigest())
                if fault is not None:
                    spoiled[item.id, chunk.start_ms] = fault  # the gate's chunk key
        except AudioError:
            continue
    asyncio.run(client_cap.aclose())
    return spoiled


def _target_flag(faults: dict[str, float]) -> str | None:
    active = [name for name, rate in faults.items() if rate > 0]
    return FAULT_FLAGS[active[0]] if len(active) == 1 else None


def _tally(
    items: list[ItemRecord], spoiled: dict[tuple[int, int], str], *, flag: str | None, answered: int
) -> Tally:
    tally = Tally(recordings=len(items), chunks=answered, provoked_chunks=len(spoiled))
    for item in items:
        provoked = sorted(index for (item_id, index) in spoiled if item_id == item.id)
        chunk_flags: dict[str, Any] = item.extras.get("quality", {}).get("chunk_flags", {})
        if not provoked:
            if item.flags:
                tally.false_flags += len(item.flags)
                tally.false_examples.append(f"{Path(item.source_uri).name}: {item.flags}")
            continue
        tally.provoked_recordings += 1
        for other in item.flags:
            if other != flag:
                tally.other_flags[other] = tally.other_flags.get(other, 0) + 1
        tally.caught_recordings += int(flag in item.flags and item.status == "needs_review")
        tally.caught_chunks += sum(flag in chunk_flags.get(str(i), ()) for i in provoked)
    return tally


def _counts(flags: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(flags.items())) or "0"


def main() -> None:
    """Build the corpus once, run clean and each fault, print one markdown table."""
    rates = 0.3
    runs: list[tuple[str, dict[str, float], int]] = [
        ("clean, 5 MB chunks", {}, DEFAULT_CAP_BYTES),
        ("clean, 224 kB chunks", {}, SMALL_CAP_BYTES),
        *((f"{name}={rates}", {name: rates}, SMALL_CAP_BYTES) for name in FAULT_FLAGS),
    ]
    print("| run | flag | recordings | answers | provoked chunks | caught chunks "
          "| provoked recordings | caught recordings | false flags | other flags |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = build_corpus(Path(tmp) / "corpus")
        for title, faults, cap in runs:
            tally = measure(
                corpus, faults=faults, cap_bytes=cap, seed=random.Random(title).randrange(1000)
            )
            flag = _target_flag(faults) or "—"
            print(f"| {title} | {flag} | {tally.recordings} | {tally.chunks} "
                  f"| {tally.provoked_chunks} | {tally.caught_chunks} "
                  f"| {tally.provoked_recordings} | {tally.caught_recordings} "
                  f"| {tally.false_flags} | {_counts(tally.other_flags)} |")  # fmt: skip
            for example in tally.false_examples:
                print(f"  false flag: {example}")


if __name__ == "__main__":
    main()
