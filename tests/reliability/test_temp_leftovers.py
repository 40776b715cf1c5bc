"""Part 4: a SIGKILL mid-fetch leaves patient audio only in a 0600 file in a 0700 folder
named after the killed process, and the next start removes it.

Recordings come from a real S3 (moto server) so that medasr copies them into its temp
directory; the devserver answers slowly so that the copies are still there when the
process is killed the moment the first copy appears.
"""

from __future__ import annotations

import stat
import time
from pathlib import Path

from tests.reliability.corpus import sentence, tone_samples
from tests.reliability.evidence import items
from tests.reliability.harness import Medasr
from tests.storage_servers import S3Server


def _wav_bytes(text: str) -> bytes:
    import io

    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, tone_samples(text, sample_rate_hz=16_000), 16_000, format="WAV")
    return buffer.getvalue()


def _first_copy(medasr: Medasr, *, timeout_s: float = 300) -> Path:
    """The first file medasr writes into its temp directory, as soon as it exists."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in medasr.tmp.glob("medasr-*/source*"):
            return path
        time.sleep(0.001)
    raise AssertionError(f"no fetched copy within {timeout_s} s: {medasr.temp_leftovers()}")


def test_sigkill_mid_fetch_leaves_private_files_that_the_next_start_removes(
    tmp_path: Path, tone_devserver, medasr_for, s3_server: S3Server, figures, prefect_api
) -> None:
    import random

    bucket = s3_server.create_bucket()
    rng = random.Random(4)
    texts = {f"ward/dictation-{i}.wav": sentence(i, rng=rng) for i in range(3)}
    for key, text in texts.items():
        s3_server.client().put_object(Bucket=bucket, Key=key, Body=_wav_bytes(text))
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(latency_ms=3000)
    env = {"AWS_ENDPOINT_URL": s3_server.endpoint_url, **prefect_api}
    medasr = medasr_for(server, database_url, **env)
    source = f"s3://{bucket}/ward"

    running = medasr.start("run", source, "--language", "en-IN")
    copy = _first_copy(medasr)
    running.kill()
    running.end_orphans()

    folder = copy.parent
    assert folder.name.startswith(f"medasr-{running.process.pid}-")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    left_by_kill = medasr.temp_leftovers()

    done = medasr.run("run", source, "--language", "en-IN", **env)

    assert done.returncode == 0, done.describe()
    assert medasr.temp_leftovers() == []  # the killed run's folder too
    assert {Path(r["source_uri"]).name: r["text"] for r in items(database_url)} == {
        Path(k).name: t for k, t in texts.items()
    }
    figures("temp-leftovers", left_by_kill=len(left_by_kill), left_after_restart=0)
