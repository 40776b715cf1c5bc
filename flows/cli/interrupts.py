"""Ctrl-C and SIGTERM during a run: finish what is on the wire, give the rest back, exit 130.

Prefect's engine absorbs the cancellation that asyncio delivers on SIGINT (a run went on
to its end), so the CLI handles both signals itself. The first stops every request gate
of the process, as rejected credentials do: requests already on the wire finish and are
recorded, files not yet sent go back to pending, and the flow ends with its summary.
The second ends the process at once, after journaling the paid answers whose store
write is still being retried (tasks/work/journal.py); the next run on this host records
them and takes back its items (leases of dead processes, storage/owners.py).

Prefect's flow engine installs a SIGTERM handler of its own while a flow runs
(prefect.utilities.engine.capture_sigterm): it raises TerminationSignal wherever the main
thread is, the flow crashes, the answers in flight are thrown away and their items stay
`processing` until their leases end. That bridge serves a process a Prefect runner
supervises (its cancellations); a medasr command is not one, so while the command awaits
its flow the engine's bridge is left out and SIGTERM stays the first Ctrl-C's.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TypeVar

from config.errors import EXIT_INTERRUPTED
from tasks.throttle.gate import interrupt_all_gates
from tasks.work.journal import keep_unrecorded_answers

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# The name prefect.flow_engine calls for its SIGTERM bridge (imported there, not exported)
_PREFECT_BRIDGE = "capture_sigterm"
T = TypeVar("T")


async def run_interruptibly(flow_run: Coroutine[Any, Any, T]) -> T:
    """Await a flow run with our own SIGINT/SIGTERM handling (see the module docstring)."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        if len(received) > 1:  # asked twice: quit now, the leases come back later
            keep_unrecorded_answers()  # paid for: the next run records, not buys, them
            os._exit(EXIT_INTERRUPTED)
        interrupt_all_gates()
        sys.stderr.write(
            "medasr: interrupted: finishing the requests in flight, giving the other files "
            "back (press Ctrl-C again to quit at once)\n"
        )

    before = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    for signum in _SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return await flow_run
    finally:
        for signum in _SIGNALS:
            loop.remove_signal_handler(signum)  # leaves SIGTERM at SIG_DFL: put back ours
            signal.signal(signum, before[signum])


@contextmanager
def sigterm_left_to_the_command() -> Iterator[None]:
    """For the block, flows this process runs leave SIGTERM to run_interruptibly (see the
    module docstring); called once Prefect is imported (the command's flows import it)."""
    from prefect import flow_engine

    bridge = getattr(flow_engine, _PREFECT_BRIDGE)
    setattr(flow_engine, _PREFECT_BRIDGE, nullcontext)
    try:
        yield
    finally:
        setattr(flow_engine, _PREFECT_BRIDGE, bridge)
