"""A 413 tells the operator what to run, and running it finishes the recording.

The service takes less than medasr's cap (the devserver's --max-bytes): the run records
the refusal as a permanent failure, so the command that re-queues it must be named; the
operator lowers MEDASR_MAX_UPLOAD_BYTES and runs exactly what the message says.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.evidence import items

SERVICE_MAX_BYTES = 64_000  # 2 s of 16 kHz audio: under each file's single chunk


def test_the_413_message_names_the_command_that_finishes_the_recording(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api
) -> None:
    texts = write_tone_corpus(tmp_path / "corpus", 1, seed=8)
    age_files(tmp_path / "corpus")
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    server = tone_devserver(max_bytes=SERVICE_MAX_BYTES)
    medasr = medasr_for(server, database_url, **prefect_api)

    first = medasr.run("run", str(tmp_path / "corpus"), "--language", "en-IN")
    [row] = items(database_url)
    assert first.returncode == 1, first.describe()
    assert (row["status"], row["error_kind"]) == ("failed", "payload_too_large")
    said = re.search(r"`medasr ([^`]+)`", row["error_message"])
    assert said is not None, row["error_message"]
    assert "MEDASR_MAX_UPLOAD_BYTES" in row["error_message"]

    cap = {"MEDASR_MAX_UPLOAD_BYTES": str(SERVICE_MAX_BYTES)}
    medasr.run(*shlex.split(said.group(1)), "--language", "en-IN", **cap)

    [row] = items(database_url)
    assert (row["status"], row["text"]) == ("done", *texts.values())
