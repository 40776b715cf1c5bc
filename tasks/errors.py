"""Errors of the pipeline steps: the audio engine (tasks/audio/) and the shared request limit.

    MedasrError (config/errors.py)
    └── TerminalError                  the same file fails the same way next time
        └── AudioError                 kind "audio_error"
            ├── AudioNotFound          "audio_not_found": missing, a directory, unreadable
            ├── NotAudio               "not_audio": text, an image, a video without sound
            ├── CorruptAudio           "corrupt_audio": truncated or damaged; ffmpeg's words
            │   └── DamagedTail        the same kind, raised after the readable chunks:
            │                          the recording is kept as partial, not failed
            ├── EmptyAudio             "empty_audio": zero bytes, or no samples at all
            ├── UnsupportedAudio       "unsupported_audio": a codec ffmpeg lacks
            │   └── UnsupportedFormat  "unsupported_format": a file ffmpeg cannot open at
            │                          all (DS2, an archive, an unknown format); the
            │                          message names the format and what to do
            ├── DecodeFailed           "decode_failed": ffmpeg failed otherwise, or timed out
            └── SilentAudio            "silent_audio": decodes, but holds no speech to send
        └── MetadataInvalid            "metadata_invalid": a manifest value this recording
            │                          needs cannot be used; that recording alone fails
            │                          (tasks/delivery/errors.py: an identifier)
            └── LanguageInvalid        the manifest's language for this recording is not one
                                       the service takes (or none is given): nothing is sent
    RunStop (config/errors.py)         the whole run stops; RunInterrupted lives there too
    └── RunInterrupted (config/errors.py)
        └── DecoderInterrupted         "decoder_interrupted": ffmpeg ended by a signal (a Ctrl-C, a
                                       kill): no verdict on the recording, it stays pending
    └── ConfigError (config/errors.py)
        └── SharedLimitUnavailable     "shared_limit_unavailable": MEDASR_GLOBAL_CONCURRENCY is
                                       set but the Prefect server gives no slot; the run stops
                                       (fail closed), items go back to pending
        └── FfmpegMissing              "ffmpeg_missing": no ffmpeg binary can be found (or
                                       IMAGEIO_FFMPEG_EXE names no executable): the run stops,
                                       the recording that needed it stays pending
        └── RetentionInvalid           "retention_invalid": a purge period that is not
                                       like 90d, 12w or 1y (exit 2)
        └── QualityOptionInvalid       "quality_option_invalid": a `medasr quality` grouping
                                       or count that names nothing (exit 2)
        └── ChunkFolderTaken           "chunk_folder_taken": `medasr split --out` names a
                                       folder holding chunk-NNNN.wav files split did not
                                       write; nothing is removed (exit 2)

Every message is one sentence that names the file and says what is wrong, e.g.
"not an audio file: /x/y.wav (ffmpeg found no audio stream)". ffmpeg's stderr is
summarized to one line; audio content never appears in a message.
"""

from __future__ import annotations

import signal

from config.errors import ConfigError, RunInterrupted, TerminalError


class MetadataInvalid(TerminalError):
    """A manifest value this recording needs cannot be used: that recording fails alone."""

    kind = "metadata_invalid"


class LanguageInvalid(MetadataInvalid):
    """A recording's language, from its manifest row, is not one the service takes."""


class AudioError(TerminalError):
    """A recording could not be turned into 16 kHz mono chunks; `path` names it."""

    kind = "audio_error"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class AudioNotFound(AudioError):
    """The path does not exist, is not a regular file, or cannot be read."""

    kind = "audio_not_found"


class NotAudio(AudioError):
    """The file is readable but holds no audio (text, an image, a silent video)."""

    kind = "not_audio"


class CorruptAudio(AudioError):
    """The file looks like audio but is truncated or damaged."""

    kind = "corrupt_audio"


class DamagedTail(CorruptAudio):
    """The recording decodes up to `damaged_at_ms`, then is truncated or damaged.

    Raised by iter_chunks after every readable chunk (one with speech among them) was
    yielded; `reason` is the sentence the whole-file CorruptAudio would have carried.
    """

    def __init__(self, reason: str, *, path: str | None, damaged_at_ms: int) -> None:
        super().__init__(reason, path=path)
        self.reason = reason
        self.damaged_at_ms = damaged_at_ms

    def as_partial(self) -> dict[str, object]:
        """The item's `extras["partial"]` (the contract the quality gate reads)."""
        return {"damaged_at_ms": self.damaged_at_ms, "reason": self.reason, "error_kind": self.kind}


class EmptyAudio(AudioError):
    """The file has zero bytes, or decodes to zero samples."""

    kind = "empty_audio"


class UnsupportedAudio(AudioError):
    """A container or codec the bundled ffmpeg cannot decode."""

    kind = "unsupported_audio"


class UnsupportedFormat(UnsupportedAudio):
    """A file whose format the bundled ffmpeg does not know; the message says what to do."""

    kind = "unsupported_format"


class DecodeFailed(AudioError):
    """ffmpeg failed for another reason, or did not finish in time."""

    kind = "decode_failed"


class SilentAudio(AudioError):
    """The whole recording is silent: nothing to send, the item is skipped."""

    kind = "silent_audio"


class SharedLimitUnavailable(ConfigError):
    """The Prefect server holding the shared request limit gave no slot: send nothing."""

    kind = "shared_limit_unavailable"


class FfmpegMissing(ConfigError):
    """No ffmpeg binary to run (tasks/audio/ffmpeg_binary.py): the host's fault, not a file's."""

    kind = "ffmpeg_missing"


class DecoderInterrupted(RunInterrupted):
    """ffmpeg was ended by a signal: says nothing about the recording, which stays pending."""

    kind = "decoder_interrupted"

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


def signal_name(returncode: int) -> str:
    """The name of the signal a negative subprocess return code stands for."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


class RetentionInvalid(ConfigError):
    """A retention period (`--older-than`, `--retention`) that is not a number of days,
    weeks or years, or is zero."""

    kind = "retention_invalid"


class QualityOptionInvalid(ConfigError):
    """A `medasr quality` option that names nothing: an unknown grouping, a bad count."""

    kind = "quality_option_invalid"


class ChunkFolderTaken(ConfigError):
    """`medasr split --out` names a folder whose chunk-NNNN.wav files are not all chunks
    split wrote: they are someone's files, kept as they are."""

    kind = "chunk_folder_taken"
