"""A command's flow run from a terminal: the head start while Prefect starts, then the flow.

Both run in one event loop under the command's own Ctrl-C handling (interrupts.py): the
head start (flows/prefect_runtime/head_start.py) sends requests while Prefect's
temporary server boots, and the flow carries on its drain once the server answers. No
head start with a shared limit (it is held by Prefect) or a configured PREFECT_API_URL
(it answers at once). If the server never answers, or the operator interrupts while it
starts, the head start claims nothing more, its files in flight finish and are recorded
(a paid answer is never lost), and the command exits as before the head start existed,
saying how many files were finished meanwhile.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from config.errors import (
    EXIT_INTERRUPTED,
    EXIT_TEMPORARY,
    ConfigError,
)
from config.sections import PipelineSettings
from flows.cli.error_exits import credentials_rejected, usage_error
from flows.cli.interrupts import run_interruptibly, sigterm_left_to_the_command
from flows.prefect_runtime.head_start import HeadStart, may_start_early
from flows.prefect_runtime.held_logs import HeldLogs
from flows.prefect_runtime.prefect_api import (
    PrefectApi,
    PrefectDidNotStart,
    PrefectUnavailable,
    start_prefect_api,
)
from flows.prefect_runtime.quiet_errors import typed_errors_without_traceback
from flows.reporting.summary import RunSummary
from flows.setup.bootstrap import Run
from service.errors import CredentialsRejected
from storage.errors import SourceNotFound, SourceUnreadable
from tasks.throttle.gate import operator_interrupted

# A flow built around the Run, carrying on the head start (if any): call it for its state.
FlowRun = Callable[[HeadStart | None], Any]
_POLL_S = 0.1  # how often the wait for Prefect looks for Ctrl-C
SLOTS_FILL_S = 0.5  # the longest the flows' import waits for the slots to fill
# Each command's flow and what it needs of Prefect: imported in a thread once the head
# start is under way, each command only its own (a deployment's flow, built at import,
# costs its parameter schema).
BACKLOG_FLOW = ("flows.reporting.states", "flows.backlog_run")
RERUN_FLOW = ("flows.reporting.states", "flows.rerun")


class _InterruptedWhileStarting(Exception):
    """The operator interrupted before the flow started."""


def run_flow(
    flow_run: FlowRun,
    *,
    modules: tuple[str, ...],
    api: PrefectApi,
    run: Run,
    early: bool,
    held: HeldLogs,
) -> RunSummary:
    """The flow's summary, begun with a head start when `early` and the API is still
    starting; its `modules` imported meanwhile (BACKLOG_FLOW, RERUN_FLOW); log lines
    `held` until Prefect is imported are handed on then. An error raised before there
    was a summary exits with its line."""
    heads: list[HeadStart] = []  # the head start, once begun
    try:
        with typed_errors_without_traceback():
            flow = _flow_after_start(
                flow_run, modules=modules, api=api, run=run, early=early, heads=heads, held=held
            )
            summary = asyncio.run(run_interruptibly(flow))
    except PrefectUnavailable as exc:
        usage_error("configuration error", f"{exc}; {_meanwhile(run, heads)}")
    except PrefectDidNotStart as exc:  # a busy host, not a setting: try again
        typer.echo(f"medasr: Prefect did not start: {exc}; {_meanwhile(run, heads)}", err=True)
        raise typer.Exit(EXIT_TEMPORARY) from None
    except _InterruptedWhileStarting:
        if not heads:
            typer.echo("medasr: interrupted before any file was sent", err=True)
        else:
            interrupted_line()
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except CredentialsRejected as exc:  # stopped before there was anything to summarize
        credentials_rejected(str(exc))
    except ConfigError as exc:
        usage_error("configuration error", exc)
    except (SourceNotFound, SourceUnreadable) as exc:  # a bucket that is not there
        usage_error("usage error", exc)
    assert isinstance(summary, RunSummary), type(summary)
    return summary


async def _flow_after_start(
    flow_run: FlowRun,
    *,
    modules: tuple[str, ...],
    api: PrefectApi,
    run: Run,
    early: bool,
    heads: list[HeadStart],
    held: HeldLogs,
) -> Any:
    head = HeadStart(run) if early and api.starting and may_start_early(run) else None
    heads.extend([head] if head is not None else [])
    ready = asyncio.create_task(_ready_unless_interrupted(api))
    preload = asyncio.create_task(_import_flows_when(head, modules, run=run, ready=ready))
    try:
        await ready
    except (PrefectDidNotStart, PrefectUnavailable, _InterruptedWhileStarting):
        if head is not None:  # the files in flight finish and are recorded
            await head.stop()
        preload.cancel()
        # Prefect's logging: the held lines are printed, then the error
        await _import_flows(modules)
        held.hand_on()
        raise
    await preload
    held.hand_on()
    from flows.reporting.states import summary_from  # Prefect: once the head start is under way

    with api.in_use(), sigterm_left_to_the_command():
        return await summary_from(await flow_run(head)(return_state=True))


def flows_import_due(
    head: HeadStart | None,
    *,
    run: Run,
    api_ready: bool,
    since_first_request_s: float | None = None,
) -> bool:
    """Whether to import the flows (and Prefect) now: at once without a head start; else
    once it has sent a request for every slot (or for every file it expects, if fewer),
    has finished, the API answers, or SLOTS_FILL_S after its first request.

    Not at its first request: the import is about a second of CPU, most of it holding
    the interpreter while the files that fill the other slots are decoded. What that
    buys is small: in bench/night_bench.py's paired rounds every slot was in use at
    1.20-1.67 s with this rule and at 1.20-1.53 s with the first-request one, within the
    host's noise. The bound keeps a paced or throttled head start from holding the
    import until the API answers, when the flow would wait for it."""
    if head is None or head.idle or api_ready:
        return True
    if since_first_request_s is not None and since_first_request_s >= SLOTS_FILL_S:
        return True
    slots = min(run.settings.pipeline.concurrency, max(head.result.planned, 1))
    return run.stats.requests >= slots


async def _import_flows_when(
    head: HeadStart | None, modules: tuple[str, ...], *, run: Run, ready: asyncio.Task[None]
) -> None:
    """Import the flows and Prefect in a thread once flows_import_due says so, so that
    the head start's first requests do not wait for them."""
    first_request_at: float | None = None
    while True:
        if first_request_at is None and run.stats.requests:
            first_request_at = time.monotonic()
        waited_s = None if first_request_at is None else time.monotonic() - first_request_at
        if flows_import_due(head, run=run, api_ready=ready.done(), since_first_request_s=waited_s):
            break
        await asyncio.sleep(_POLL_S)
    await _import_flows(modules)


async def _import_flows(modules: tuple[str, ...]) -> None:
    with _collector_paused():
        for name in modules:
            await asyncio.to_thread(importlib.import_module, name)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block, then the objects made
    meanwhile frozen (kept out of later collections) and the collector resumed.

    Importing the flows (Prefect with them) makes about a million objects that live as
    long as the command; the collector walked them again and again while they were made:
    1.9-2.0 s of CPU became 1.6-1.8 s (three runs each). Prefect's temporary server boots
    the same way (flows/prefect_runtime/prefect_api.py).
    """
    if not gc.isenabled():  # paused by someone else: theirs to resume
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


async def _ready_unless_interrupted(api: PrefectApi) -> None:
    """Wait for the API; raises PrefectDidNotStart, or _InterruptedWhileStarting."""
    ready = asyncio.create_task(api.ready())
    while not ready.done():
        if operator_interrupted() is not None:
            ready.cancel()
            raise _InterruptedWhileStarting
        await asyncio.wait({ready}, timeout=_POLL_S)
    ready.result()


def _meanwhile(run: Run, heads: list[HeadStart]) -> str:
    """What the head start did before Prefect failed, in words."""
    finished = sum(head.finished_files() for head in heads)
    if not run.stats.requests and not finished:
        return "nothing was sent"
    files = "1 file was" if finished == 1 else f"{finished} files were"
    return f"{files} finished and recorded meanwhile, the others are pending"


def interrupted_line() -> None:
    """Say what an interrupted run leaves behind."""
    typer.echo(
        "medasr: interrupted: finished files are recorded, the others are pending; "
        "run the same command again to go on",
        err=True,
    )


def started_prefect_api(pipeline: PipelineSettings) -> PrefectApi:
    """Prefect's API for a command that runs its flows itself (`medasr demo`), starting in
    the background as for `medasr run`; else one line and exit 2. `wait_for_prefect`
    waits for it."""
    try:
        return start_prefect_api(
            start_timeout_s=pipeline.prefect_start_timeout_s,
            stall_s=pipeline.prefect_start_stall_s,
        )
    except PrefectUnavailable as exc:
        usage_error("configuration error", exc)


def wait_for_prefect(api: PrefectApi) -> None:
    """Return once `api` answers; else one line and exit 75 (it did not start) or 2."""
    try:
        asyncio.run(api.ready())
    except PrefectUnavailable as exc:
        usage_error("configuration error", exc)
    except PrefectDidNotStart as exc:  # a busy host, not a setting: try again
        typer.echo(f"medasr: Prefect did not start: {exc}; nothing was sent", err=True)
        raise typer.Exit(EXIT_TEMPORARY) from None
