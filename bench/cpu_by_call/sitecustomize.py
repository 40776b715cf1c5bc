"""CPU by call in `medasr`'s process: loaded (as Python loads any sitecustomize on its
path) by bench/night_bench.py --cpu-by-call, which puts this folder on PYTHONPATH.

Every function a worker thread runs (asyncio.to_thread, run_in_executor: the store's
group commits, decoding, fetching) is timed with time.thread_time, which counts only
that thread's CPU; the event loop's thread is the main thread's CPU. At exit, one line
each on stderr, from the most CPU down. Only in a process started as `medasr` with
BENCH_CPU_BY_CALL set: Prefect's server and the decoding workers are left alone. It
wraps `concurrent.futures.thread._WorkItem.run(self)` as Python 3.11 has it (the version
medasr pins).
"""

import os
import sys

if os.path.basename(sys.argv[0]) == "medasr" and os.environ.get("BENCH_CPU_BY_CALL"):
    import atexit
    import collections
    import concurrent.futures.thread
    import functools
    import threading
    import time

    _cpu_s: collections.Counter[str] = collections.Counter()
    _calls: collections.Counter[str] = collections.Counter()
    _lock = threading.Lock()
    _run_work_item = concurrent.futures.thread._WorkItem.run
    _started_cpu_s = time.process_time()
    _main_started_cpu_s = time.thread_time()

    def _label(fn: object) -> str:
        """The function a work item runs, through functools.partial and Context.run."""
        while isinstance(fn, functools.partial):
            run_in_context = getattr(fn.func, "__qualname__", "") == "Context.run"
            fn = fn.args[0] if run_in_context and fn.args else fn.func
        generator = getattr(getattr(fn, "__self__", None), "gen", None)  # a `with` block's
        if generator is not None:  # entered or left in a thread: the block's function
            return f"{generator.__qualname__} ({getattr(fn, '__name__', '?')})"[:80]
        return str(getattr(fn, "__qualname__", repr(fn)))[:80]

    def _timed_run(self: concurrent.futures.thread._WorkItem) -> None:  # type: ignore[type-arg]
        label = _label(self.fn)
        started_s = time.thread_time()
        try:
            _run_work_item(self)
        finally:
            with _lock:
                _cpu_s[label] += time.thread_time() - started_s
                _calls[label] += 1

    def _report() -> None:
        total_s = time.process_time() - _started_cpu_s
        main_s = time.thread_time() - _main_started_cpu_s
        lines = [f"cpu-by-call: process {total_s:.2f} s; main thread (event loop) {main_s:.2f} s"]
        for label, cpu_s in _cpu_s.most_common(12):
            per_call_ms = 1000 * cpu_s / _calls[label]
            lines.append(
                f"cpu-by-call: {cpu_s:6.2f} s {_calls[label]:6d} calls"
                f" {per_call_ms:7.2f} ms each  {label}"
            )
        print("\n".join(lines), file=sys.stderr, flush=True)

    concurrent.futures.thread._WorkItem.run = _timed_run  # type: ignore[method-assign]
    atexit.register(_report)
