"""The state a flow run ends in: what the night's exit code says, in Prefect's words.

Exit code 0 ends `Completed`. Files that failed, were skipped as silent or are held for
review (exit code 1) end `Failed`, its message counting them: red on the dashboard,
counted among failed runs, and `prefect.flow-run.Failed` for an automation. Credentials
or a setting that stopped the run end `Failed` naming the reason; an operator's Ctrl-C
or SIGTERM ends `Cancelled`. The RunSummary rides along as the state's data.
"""

from __future__ import annotations

from typing import Any

from prefect.client.schemas.objects import State
from prefect.states import Cancelled, Completed, Failed

from flows.reporting.summary import RunSummary, StopReason

_STOPPED = {
    StopReason.CREDENTIALS: "credentials rejected",
    StopReason.CONFIGURATION: "stopped by configuration",
}


def counts_message(summary: RunSummary) -> str:
    """The counts that are not 0: "3 failed, 1 held for review, 1 skipped; 4 done"."""
    problems = [
        (summary.failed_total, "failed"),
        (summary.files_needs_review, "held for review"),
        (summary.files_skipped, "skipped"),
    ]
    said = ", ".join(f"{n} {what}" for n, what in problems if n)
    done = f"{summary.files_done} done"
    counts = f"{said}; {done}" if said else done
    budget = summary.budget_message
    return f"{counts}; {budget}" if budget else counts


def final_state(summary: RunSummary) -> State[Any]:
    """The flow run's final state for its summary (see the module docstring)."""
    if summary.stopped is StopReason.INTERRUPTED:
        return Cancelled(message=f"interrupted: {counts_message(summary)}", data=summary)
    if summary.stopped is not None:
        reason = summary.stop_message or "the run stopped"
        message = f"{_STOPPED[summary.stopped]}: {reason} (exit code {summary.exit_code})"
        return Failed(message=message, data=summary)
    if summary.exit_code == 0:
        return Completed(message=counts_message(summary), data=summary)
    return Failed(message=counts_message(summary), data=summary)


async def summary_from(state: State[Any]) -> RunSummary:
    """The RunSummary a flow run ended with; raises what the flow raised instead."""
    data = await state.aresult(raise_on_failure=False)
    if isinstance(data, BaseException):
        raise data
    if not isinstance(data, RunSummary):
        raise TypeError(f"the flow ended {state.type.value} without a summary: {state.message}")
    return data
