"""What the transcription service accepts and answers, as data (see service-spec.md)."""

from __future__ import annotations

from typing import Final

TRANSCRIBE_PATH: Final = "/voice/get-asr"
# Document upload into the patient record (plain multipart `file`, or a JWE envelope).
DOCS_PATH: Final = "/mr/api/v2/docs"

# Exactly the codes of the spec; anything else is refused before a request is made.
LANGUAGES: Final[dict[str, str]] = {
    "en-IN": "English (India)",
    "en-US": "English (United States)",
    "hi": "Hindi",
    "ta": "Tamil",
    "te": "Telugu",
    "kn": "Kannada",
    "ml": "Malayalam",
    "bn": "Bengali",
    "gu": "Gujarati",
    "mr": "Marathi",
    "pa": "Punjabi",
}

# "5 MB" read the safe way: decimal megabytes, header and envelope included.
SERVICE_MAX_UPLOAD_BYTES: Final = 5_000_000
PREFERRED_SAMPLE_RATE_HZ: Final = 16_000
WAV_HEADER_BYTES: Final = 44
UPLOAD_FIELD: Final = "file"
UPLOAD_CONTENT_TYPE: Final = "audio/wav"

# Error bodies, exactly as the spec's examples.
MESSAGE_UNAUTHORIZED: Final = "Unauthorized"
MESSAGE_FORBIDDEN: Final = "Forbidden"
MESSAGE_TOO_LARGE: Final = "Request Entity Too Large"
MESSAGE_NO_FILE: Final = "Internal Server Error"

# Multipart framing around the file: boundaries, part headers. Generous on purpose.
MULTIPART_OVERHEAD_BYTES: Final = 512


def chunk_filename(index: int) -> str:
    """The upload filename of chunk `index` (1-based): chunk-0003.wav."""
    return f"chunk-{index:04d}.wav"


def is_supported_language(code: str) -> bool:
    """True for exactly the 11 codes of the spec (case-sensitive)."""
    return code in LANGUAGES
