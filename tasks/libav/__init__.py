"""libav decoding in a long-lived worker process (tasks/audio/decoder_pool.py drives it).

Apart from `tasks.audio` on purpose: the worker imports this package alone (PyAV and the
standard library), not numpy, soxr or the splitter, so it starts in a few hundredths of a
second of CPU.
"""
