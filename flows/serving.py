"""Serving deployments until SIGTERM or Ctrl-C, and stopping cleanly on either.

Prefect's `serve()` stops its runner on SIGTERM by calling the runner's `stop()` inside
the signal handler, on the thread of the running event loop, where `stop()` only makes
the `astop()` coroutine: it is never awaited (a RuntimeWarning on every stop) and the
process leaves through `sys.exit` in the middle of the loop. Here SIGTERM cancels the
runner's task on its own loop, as Ctrl-C does, whatever phase it is in; the runner
leaves as after Ctrl-C, and the next `medasr serve` resumes the schedules.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any, cast
from uuid import UUID

from prefect.deployments.runner import RunnerDeployment
from prefect.runner import Runner
from prefect.settings import PREFECT_UI_URL

from flows.schedule_check import check_schedules


class _Terminated(Exception):
    """SIGTERM before the runner's loop started."""


class _Runner(Runner):
    """Prefect's runner, stopped by SIGTERM the way Ctrl-C stops it: its task is
    cancelled on its own loop."""

    _main: asyncio.Task[None] | None = None

    async def serve(self) -> None:
        self._main = asyncio.current_task()  # type: ignore[assignment]
        await self.start()

    def handle_sigterm(self, *args: Any, **kwargs: Any) -> None:
        self._logger.info("SIGTERM received, stopping")
        try:
            loop = asyncio.get_running_loop()  # the handler runs on the main thread
        except RuntimeError:  # still registering: nothing runs yet to stop
            raise _Terminated from None
        loop.call_soon_threadsafe(self._cancel_main)  # wakes the loop from its wait

    def _cancel_main(self) -> None:
        if self._main is not None:
            self._main.cancel()


async def _serve_and_check(runner: _Runner, ids: dict[str, UUID], *, timezone: str) -> None:
    """The runner, and beside it the one check that the server schedules its runs."""
    check = asyncio.create_task(check_schedules(ids, timezone=timezone))
    try:
        await runner.serve()
    finally:
        check.cancel()


def serve_deployments(*deployments: RunnerDeployment, timezone: str) -> None:
    """Register `deployments` with the Prefect server and run them as scheduled until
    SIGTERM or Ctrl-C; on either, the call returns. Their next runs are said in
    `timezone` once the server has scheduled them (flows/schedule_check.py)."""
    runner = _Runner(pause_on_shutdown=True)
    # The runner installs the same handler when it starts; this one covers registering.
    signal.signal(signal.SIGTERM, runner.handle_sigterm)
    try:
        # Outside an event loop add_deployment registers at once and returns the id.
        ids = {f"{d.flow_name}/{d.name}": cast(UUID, runner.add_deployment(d)) for d in deployments}
        print(
            "medasr serve: deployments being served and polling for scheduled runs: "
            f"{', '.join(ids)}",
            flush=True,
        )
        print(f"medasr serve: Prefect UI at {PREFECT_UI_URL.value()}", flush=True)
        asyncio.run(_serve_and_check(runner, ids, timezone=timezone))
    except (_Terminated, asyncio.CancelledError):
        print("medasr serve: stopped; the next `medasr serve` resumes the schedules")
    except KeyboardInterrupt:
        print("medasr serve: interrupted; the next `medasr serve` resumes the schedules")
