"""Tone dictation: text as dual-tone symbols, the exact-text oracle for splitting tests.

Format (version 1):

* Text is lowercased and split on whitespace into words. Every character of a word must
  be in `ALPHABET` (a-z, 0-9 and ``. , - ' / % : ; ? ! ( )``); anything else is a
  ValueError.
* Each character is one symbol: a 50 ms dual tone (one of 6 low frequencies,
  420-1120 Hz, plus one of 8 high frequencies, 1320-3280 Hz; DTMF-like, all inside
  the telephone band so mp3/AAC at 64 kbps and resampling keep them), 5 ms
  raised-cosine ramps, each tone at amplitude 0.35 of full scale. Symbol index
  ``i`` uses low ``i // 8`` and high ``i % 8``.
* 20 ms of silence between the symbols of a word (far below a 250 ms pause),
  350 ms between words, 800 ms after a word that ends with ``.`` (a sentence),
  300 ms of silence before the first and after the last word.

Decoding: 20 ms Hann frames every 5 ms; the power at the 14 candidate frequencies is
taken with one matrix product per block of frames (a vectorized Goertzel). A frame is
a symbol frame when its candidate power is high relative to the recording's own
symbol level, its strongest low and high tones carry half the frame's energy (this
rejects noise and hum) and neither is missing (this rejects a lone sine). Runs of
15-160 ms of symbol frames are symbols; each is identified by its strongest low and
high frequency over the run; gaps over 150 ms separate words. Words are joined with one
space. The decoder is level-independent and works on any sample rate >= 8 kHz (lower
rates are refused with a ValueError: the tones would not fit below Nyquist).
"""

from __future__ import annotations

import io

import numpy as np
import numpy.typing as npt
import soundfile

ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789.,-'/%:;?!()"
LOW_FREQS_HZ = (420.0, 540.0, 670.0, 810.0, 960.0, 1120.0)
HIGH_FREQS_HZ = (1320.0, 1540.0, 1780.0, 2040.0, 2320.0, 2620.0, 2940.0, 3280.0)

SYMBOL_MS = 50
RAMP_MS = 5
SYMBOL_GAP_MS = 20
WORD_GAP_MS = 350
SENTENCE_GAP_MS = 800
EDGE_SILENCE_MS = 300
TONE_AMPLITUDE = 0.35
# The highest tone (3280 Hz) needs a Nyquist frequency above it; below this the 5 ms hop
# rounds to nothing and the decoder's framing breaks down.
MIN_SAMPLE_RATE_HZ = 8000

_FRAME_MS = 20
_HOP_MS = 5
_WORD_BREAK_MS = 150
_MIN_SYMBOL_FRAMES = 3
_LEVEL_RATIO = 0.1  # symbol frames sit within 10 dB of the recording's symbol level
_TONAL_SHARE = 0.5  # ... the two strongest candidates carry half the frame's power ...
_TONE_SHARE = 0.05  # ... and each of them is really there (lossy codecs tilt the balance)
_MAX_SYMBOL_FRAMES = 32  # 160 ms: a steady chord far longer than a symbol is not one
_SILENCE_FLOOR = 1e-8  # mean power (full scale = 1) below which nothing is a symbol
_BLOCK_FRAMES = 8192

_SYMBOL_OF_CHAR = {ch: i for i, ch in enumerate(ALPHABET)}

assert len(ALPHABET) == len(LOW_FREQS_HZ) * len(HIGH_FREQS_HZ)


def _split_words(text: str) -> list[str]:
    """Lowercase and split on whitespace; raises ValueError on a character outside ALPHABET."""
    words = text.lower().split()
    for word in words:
        bad = sorted({ch for ch in word if ch not in _SYMBOL_OF_CHAR})
        if bad:
            raise ValueError(f"tone dictation cannot encode characters {bad!r}")
    return words


def _check_sample_rate(sample_rate_hz: int) -> None:
    """Raises ValueError below MIN_SAMPLE_RATE_HZ."""
    if sample_rate_hz < MIN_SAMPLE_RATE_HZ:
        raise ValueError(
            f"sample rate must be at least {MIN_SAMPLE_RATE_HZ} Hz, got {sample_rate_hz}"
        )


def _symbol_wave(index: int, *, sample_rate_hz: int) -> npt.NDArray[np.float64]:
    """One symbol as float samples in [-1, 1]."""
    n = round(SYMBOL_MS * sample_rate_hz / 1000)
    t = np.arange(n) / sample_rate_hz
    low = LOW_FREQS_HZ[index // len(HIGH_FREQS_HZ)]
    high = HIGH_FREQS_HZ[index % len(HIGH_FREQS_HZ)]
    wave = TONE_AMPLITUDE * (np.sin(2 * np.pi * low * t) + np.sin(2 * np.pi * high * t))
    ramp_n = round(RAMP_MS * sample_rate_hz / 1000)
    ramp = 0.5 - 0.5 * np.cos(np.pi * np.arange(ramp_n) / ramp_n)
    wave[:ramp_n] *= ramp
    wave[n - ramp_n :] *= ramp[::-1]
    return wave


def encode_tone_dictation(text: str, *, sample_rate_hz: int = 16000) -> npt.NDArray[np.int16]:
    """Text to int16 mono samples at `sample_rate_hz`; raises ValueError on unknown chars."""
    _check_sample_rate(sample_rate_hz)
    waves = [_symbol_wave(i, sample_rate_hz=sample_rate_hz) for i in range(len(ALPHABET))]

    def silence(ms: int) -> npt.NDArray[np.float64]:
        return np.zeros(round(ms * sample_rate_hz / 1000))

    parts = [silence(EDGE_SILENCE_MS)]
    words = _split_words(text)
    for w, word in enumerate(words):
        for c, ch in enumerate(word):
            if c:
                parts.append(silence(SYMBOL_GAP_MS))
            parts.append(waves[_SYMBOL_OF_CHAR[ch]])
        if w < len(words) - 1:
            parts.append(silence(SENTENCE_GAP_MS if word.endswith(".") else WORD_GAP_MS))
    parts.append(silence(EDGE_SILENCE_MS))
    return np.round(np.concatenate(parts) * 32767).astype(np.int16)


def encode_to_wav_bytes(text: str, *, sample_rate_hz: int = 16000, channels: int = 1) -> bytes:
    """Text to a complete PCM s16le WAV file (the same signal on every channel)."""
    samples = encode_tone_dictation(text, sample_rate_hz=sample_rate_hz)
    frames = np.repeat(samples[:, None], channels, axis=1)
    buf = io.BytesIO()
    soundfile.write(buf, frames, sample_rate_hz, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def _to_mono_float(samples: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
    """Integer or float samples (1-D, or 2-D frames x channels) to float32 mono in [-1, 1]."""
    arr = np.asarray(samples)
    scale = 1.0
    if np.issubdtype(arr.dtype, np.integer):
        scale = float(np.iinfo(arr.dtype).max) + 1.0
    mono = arr.astype(np.float32)
    if mono.ndim == 2:
        mono = mono.mean(axis=1, dtype=np.float32)
    return (mono / np.float32(scale)).astype(np.float32)


def _frame_powers(
    signal: npt.NDArray[np.float32], *, sample_rate_hz: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per-frame power at each candidate frequency (frames x 14) and total frame power."""
    frame_n = round(_FRAME_MS * sample_rate_hz / 1000)
    hop_n = round(_HOP_MS * sample_rate_hz / 1000)
    if len(signal) < frame_n:
        return np.zeros((0, 14)), np.zeros(0)
    window = np.hanning(frame_n + 2)[1:-1].astype(np.float32)
    t = np.arange(frame_n) / sample_rate_hz
    freqs = np.array(LOW_FREQS_HZ + HIGH_FREQS_HZ)
    phase = 2 * np.pi * np.outer(t, freqs)
    basis = (np.concatenate([np.cos(phase), np.sin(phase)], axis=1) * window[:, None]).astype(
        np.float32
    )
    # Scaled so that a full-frame sine of amplitude A reads A**2 / 2, like the total power.
    tone_scale = 2.0 / float(window.sum()) ** 2
    total_weights = (window**2 / float((window**2).sum())).astype(np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(signal, frame_n)[::hop_n]
    tone_power = np.empty((len(frames), len(freqs)))
    total_power = np.empty(len(frames))
    for start in range(0, len(frames), _BLOCK_FRAMES):
        block = np.ascontiguousarray(frames[start : start + _BLOCK_FRAMES])
        proj = block @ basis
        n = len(freqs)
        tone_power[start : start + len(block)] = (proj[:, :n] ** 2 + proj[:, n:] ** 2) * tone_scale
        total_power[start : start + len(block)] = (block**2) @ total_weights
    return tone_power, total_power


def _symbol_runs(
    tone_power: npt.NDArray[np.float64], total_power: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Start and end (exclusive) frame indices of runs of symbol frames."""
    n_low = len(LOW_FREQS_HZ)
    low, high = tone_power[:, :n_low].max(axis=1), tone_power[:, n_low:].max(axis=1)
    candidate = low + high
    # Both tones must be there: a lone sine or a hum is not a symbol.
    tonal = (
        (candidate >= _TONAL_SHARE * total_power)
        & (np.minimum(low, high) >= _TONE_SHARE * total_power)
        & (candidate > _SILENCE_FLOOR)
    )
    if not tonal.any():
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    # The symbol level: a high percentile of tonal frames, so a lone loud click cannot set it.
    level = float(np.percentile(candidate[tonal], 90))
    active = tonal & (candidate >= _LEVEL_RATIO * level)
    edges = np.diff(np.concatenate([[0], active.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    keep = ((ends - starts) >= _MIN_SYMBOL_FRAMES) & ((ends - starts) <= _MAX_SYMBOL_FRAMES)
    return starts[keep], ends[keep]


def decode_tone_dictation(samples: npt.NDArray[np.generic], *, sample_rate_hz: int) -> str:
    """Samples (int or float, mono or frames x channels) back to text; '' if no symbols.

    Raises ValueError when sample_rate_hz is below MIN_SAMPLE_RATE_HZ.
    """
    _check_sample_rate(sample_rate_hz)
    signal = _to_mono_float(samples)
    tone_power, total_power = _frame_powers(signal, sample_rate_hz=sample_rate_hz)
    starts, ends = _symbol_runs(tone_power, total_power)
    if len(starts) == 0:
        return ""
    n_low = len(LOW_FREQS_HZ)
    cumulative = np.concatenate([np.zeros((1, tone_power.shape[1])), tone_power.cumsum(axis=0)])
    run_power = cumulative[ends] - cumulative[starts]
    symbols = run_power[:, :n_low].argmax(axis=1) * len(HIGH_FREQS_HZ) + run_power[
        :, n_low:
    ].argmax(axis=1)
    gaps_ms = (starts[1:] - ends[:-1]) * _HOP_MS
    words: list[str] = []
    current: list[str] = [ALPHABET[symbols[0]]]
    for symbol, gap_ms in zip(symbols[1:], gaps_ms, strict=True):
        if gap_ms > _WORD_BREAK_MS:
            words.append("".join(current))
            current = []
        current.append(ALPHABET[symbol])
    words.append("".join(current))
    return " ".join(words)


def decode_wav_bytes(wav: bytes) -> str:
    """A WAV file's bytes (any channels, int or float PCM) back to text."""
    data, sample_rate_hz = soundfile.read(io.BytesIO(wav), dtype="float32", always_2d=True)
    return decode_tone_dictation(data, sample_rate_hz=sample_rate_hz)
