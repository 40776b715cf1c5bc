"""Regenerate the demo recordings in samples/ (tone dictations of medical sentences).

Run with `.venv/bin/python samples/make_samples.py`. Each file is a tone dictation
(devserver/tone.py) that the devserver's tone engine decodes back to its text,
so the demo shows real transcripts without a real speech engine.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile

from devserver.tone import encode_tone_dictation
from tasks.audio import find_ffmpeg

HERE = Path(__file__).resolve().parent

SHORT_TEXTS = {
    "discharge-summary.wav": (
        "patient is a 54 year old male admitted with chest pain. troponin negative, "
        "ecg normal sinus rhythm. discharged on aspirin 75 mg once daily."
    ),
    "ward-round.mp3": (
        "day 3 after appendectomy. afebrile, wound clean and dry. "
        "continue oral paracetamol 1 g every 6 hours as needed."
    ),
    "clinic-letter.m4a": (
        "review of type 2 diabetes. hba1c 7.2%, blood pressure 138/84. "
        "increase metformin to 1000 mg twice daily and recheck in 3 months."
    ),
}

LONG_SENTENCES = [
    "history of present illness: progressive breathlessness over 2 weeks.",
    "no orthopnoea, no chest pain, no haemoptysis.",
    "examination: bibasal crackles, pedal oedema to the knees.",
    "chest x-ray shows cardiomegaly and small bilateral effusions.",
    "echocardiogram: ejection fraction 35%, moderate mitral regurgitation.",
    "start furosemide 40 mg iv twice daily, fluid restriction 1.5 l per day.",
    "daily weights, strict input and output chart, check electrolytes tomorrow.",
]


def write_wav(name: str, samples: np.ndarray, *, sample_rate_hz: int, subtype: str) -> None:
    soundfile.write(HERE / name, samples, sample_rate_hz, subtype=subtype)


def encode_with_ffmpeg(wav_path: Path, out: Path, *args: str) -> None:
    subprocess.run(
        [
            find_ffmpeg(),
            "-nostdin",
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-i",
            str(wav_path),
            *args,
            str(out),
        ],
        check=True,
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        for name, text in SHORT_TEXTS.items():
            if name.endswith(".wav"):
                write_wav(name, encode_tone_dictation(text), sample_rate_hz=16000, subtype="PCM_16")
                continue
            rate = 44100 if name.endswith(".mp3") else 48000
            stereo = np.repeat(encode_tone_dictation(text, sample_rate_hz=rate)[:, None], 2, axis=1)
            source = scratch / f"{name}.wav"
            soundfile.write(source, stereo, rate, subtype="PCM_16")
            codec = (
                ["-c:a", "libmp3lame", "-b:a", "96k"]
                if name.endswith(".mp3")
                else ["-c:a", "aac", "-b:a", "96k"]
            )
            encode_with_ffmpeg(source, HERE / name, *codec)
        # Long enough for several 5 MB chunks (about 156 s each at 16 kHz mono).
        long_text = " ".join(f"note {i + 1}. {s}" for i, s in enumerate(LONG_SENTENCES * 6))
        source = scratch / "long.wav"
        soundfile.write(source, encode_tone_dictation(long_text, sample_rate_hz=22050), 22050)
        encode_with_ffmpeg(source, HERE / "long-dictation.mp3", "-c:a", "libmp3lame", "-b:a", "32k")
        write_wav(
            "silence.wav",
            np.zeros(16000 * 3, dtype=np.int16),
            sample_rate_hz=16000,
            subtype="PCM_16",
        )
        mp3 = (HERE / "ward-round.mp3").read_bytes()
        (HERE / "corrupt.mp3").write_bytes(b"ID3\x03\x00\x00\x00" + mp3[200:1200][::-1])


if __name__ == "__main__":
    main()
