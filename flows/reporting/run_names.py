"""What a flow run is called and tagged in Prefect's UI: language, date, source label.

`backlog-en-IN-2026-11-24`, tagged `medasr`, `en-IN`, `source:recordings`. Parameters are
never the place for that: the CLI's flow takes none (its Run holds a token), and a
deployment's hold the source as configured.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext
from prefect.runtime import flow_run

from flows.setup.bootstrap import Run

ALL_LANGUAGES = "all"


def today() -> str:
    """The night's date (UTC), as the run names and artifacts show it."""
    return datetime.now(UTC).date().isoformat()


def run_name(kind: str, language: str | None) -> str:
    """`backlog-en-IN-2026-11-24`, `rerun-all-2026-11-24`."""
    return f"{kind}-{language or ALL_LANGUAGES}-{today()}"


def name_from_parameters(kind: str) -> Callable[[], str]:
    """A flow_run_name callable for a deployment's flow: its `language` parameter."""

    def name() -> str:
        language = flow_run.parameters.get("language")
        return run_name(kind, str(language) if language else None)

    return name


def source_label(run: Run) -> str:
    """A short name of the run's source: its last path element (or the bucket)."""
    if run.source is None:
        return "failures"
    path = run.source.location.path.rstrip("/")
    return path.rsplit("/", 1)[-1] or path


def run_tags(run: Run) -> list[str]:
    """`medasr`, the language, `source:<label>`."""
    return ["medasr", run.claim_language or ALL_LANGUAGES, f"source:{source_label(run)}"]


async def tag_flow_run(run: Run) -> None:
    """Add the run's tags to the current flow run (none outside a flow run)."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    current = context.flow_run
    tags = list(dict.fromkeys([*(current.tags or []), *run_tags(run)]))
    async with get_client() as client:
        await client.update_flow_run(current.id, tags=tags)
