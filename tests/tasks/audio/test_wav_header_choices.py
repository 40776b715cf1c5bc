"""WAV headers medasr must read as ffmpeg reads them, or leave to ffmpeg: an extensible
format's subformat GUID is all of it, not its first two bytes, and a second `fmt ` chunk
is ignored (ffmpeg takes the first)."""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import numpy as np

from devserver.tone import encode_tone_dictation
from tasks.audio import WAV_HEADER_BYTES
from tests.flows.prefect_server import MEDASR
from tests.helpers.audio import assert_close_to_reference, reference_pcm

PCM = encode_tone_dictation("header odd. all of it.", sample_rate_hz=16_000).astype("<i2")
_MEDIASUBTYPE_TAIL = bytes.fromhex("000000001000800000aa00389b71")  # KSDATAFORMAT_SUBTYPE_PCM's


def _chunk(chunk_id: bytes, payload: bytes) -> bytes:
    return chunk_id + struct.pack("<I", len(payload)) + payload


def _fmt(*, rate_hz: int = 16_000, guid: bytes | None = None) -> bytes:
    tag = 1 if guid is None else 0xFFFE
    fmt = struct.pack("<HHIIHH", tag, 1, rate_hz, rate_hz * 2, 2, 16)
    if guid is not None:
        fmt += struct.pack("<HHI", 22, 16, 0x4) + guid
    return _chunk(b"fmt ", fmt)


def _wav(path: Path, *fmts: bytes) -> Path:
    body = b"WAVE" + b"".join(fmts) + _chunk(b"data", PCM.tobytes())
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def _split(path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEDASR, "split", str(path), "--out", str(out)], capture_output=True, text=True, timeout=120
    )


def _sent(done: subprocess.CompletedProcess[str]) -> np.ndarray:
    wavs = [Path(json.loads(line)["path"]).read_bytes() for line in done.stdout.splitlines()]
    return np.frombuffer(b"".join(w[WAV_HEADER_BYTES:] for w in wavs), dtype="<i2")


def test_an_unknown_subformat_guid_is_left_to_ffmpeg_which_names_it_unsupported(
    tmp_path: Path,
) -> None:
    """A vendor's GUID that happens to start 01 00 is no PCM GUID: ffmpeg knows no codec."""
    path = _wav(tmp_path / "vendor.wav", _fmt(guid=b"\x01\x00" + bytes(range(1, 15))))

    done = _split(path, tmp_path / "chunks")

    assert done.returncode == 1, done.stdout
    assert f"medasr: unsupported audio codec in {path}" in done.stderr


def test_pcm_under_the_ambisonic_base_guid_is_read_as_ffmpeg_reads_it(tmp_path: Path) -> None:
    ambisonic = b"\x01\x00\x00\x00" + bytes.fromhex("2107d3118644c8c1ca000000")
    path = _wav(tmp_path / "ambisonic.wav", _fmt(guid=ambisonic))

    done = _split(path, tmp_path / "chunks")

    assert done.returncode == 0, done.stderr
    assert np.array_equal(_sent(done), reference_pcm(path))


def test_the_first_of_two_fmt_chunks_is_the_one_read(tmp_path: Path) -> None:
    """The first says 8 kHz: the samples last twice as long as the second one says."""
    path = _wav(tmp_path / "two.wav", _fmt(rate_hz=8_000), _fmt(rate_hz=16_000))

    done = _split(path, tmp_path / "chunks")

    assert done.returncode == 0, done.stderr
    assert_close_to_reference(_sent(done), path)  # resampled: the documented equivalent


def test_a_plain_extensible_pcm_wav_is_still_read(tmp_path: Path) -> None:
    path = _wav(tmp_path / "ext.wav", _fmt(guid=b"\x01\x00" + _MEDIASUBTYPE_TAIL))

    done = _split(path, tmp_path / "chunks")

    assert done.returncode == 0, done.stderr
    assert np.array_equal(_sent(done), reference_pcm(path))
