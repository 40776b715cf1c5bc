"""The audio engine: any recording ffmpeg decodes -> 16 kHz mono s16le WAV chunks under a
byte cap, cut in pauses (DESIGN.md §4). No Prefect, no store: plain functions.

What it offers (everything a caller needs is importable from `tasks.audio`):

    iter_chunks(path, *, max_bytes, ...)    stream a recording as Chunk objects (index,
                                            start/end sample and ms, WAV bytes, silent,
                                            voiced ms); memory is about two chunks,
                                            whatever the recording's length (with
                                            `decoders`, a compressed file of at most 5
                                            minutes is decoded whole first: ~9.6 MB)
    is_all_silent(chunks)                   True when no chunk holds speech
    DecoderPool(max_processes=N)            libav worker processes for `decoders=`
    split_to_dir(path, out_dir, *, ...)     write chunk-NNNN.wav files (0700 folder, 0600
                                            files) -> SplitResult of ChunkFile (`medasr split`)
    probe_audio(path) -> AudioInfo          duration, rate, channels, codec, container
    audio_length_ms(path)                   a recording's length before decoding (length.py)
    find_ffmpeg()                           the ffmpeg binary (a system one, else imageio-ffmpeg's);
                                            FfmpegMissing when there is none
    WAV_HEADER_BYTES                        the 44 bytes each chunk's cap includes

Inside: splitter.py (splitting), chunk_folder.py (`medasr split`'s folder), pauses.py
(speech level, pause and cut finder), decoder.py (one streaming ffmpeg process per
file), ffmpeg_binary.py (which ffmpeg, found without running it), ffmpeg.py (the probe,
stderr summaries), native_wav.py (PCM and float WAV read without ffmpeg), resampler.py
(its downmix and resampling to 16 kHz mono), decoder_pool.py (mp3, m4a, FLAC, Ogg and
AIFF decoded by libav worker processes, tasks/libav/; a long one streamed,
worker_stream.py), sniff.py (magic bytes), riff.py (the RIFF chunk walk and the WAV
header). Failures are the typed AudioError tree of tasks/errors.py, each with one
sentence.
"""

from tasks.audio.chunk_folder import ChunkFile, SplitResult, split_to_dir
from tasks.audio.decoder_pool import DecoderPool
from tasks.audio.length import audio_length_ms
from tasks.audio.splitter import (
    WAV_HEADER_BYTES,
    AudioInfo,
    Chunk,
    find_ffmpeg,
    is_all_silent,
    iter_chunks,
    probe_audio,
)

__all__ = [
    "WAV_HEADER_BYTES",
    "AudioInfo",
    "Chunk",
    "ChunkFile",
    "DecoderPool",
    "SplitResult",
    "audio_length_ms",
    "find_ffmpeg",
    "is_all_silent",
    "iter_chunks",
    "probe_audio",
    "split_to_dir",
]
