"""The source of a run listed and registered: by the flow, or before it (`Listed`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flows.setup.bootstrap import Run
from tasks.discovery.discover import Discovery, discover_and_register

# Lists a source and registers its files, with discover_and_register's arguments: the
# plain function, or its Prefect task (the flow's "discover" task run).
ListSource = Callable[..., Discovery]


def list_source(run: Run, *, lister: ListSource = discover_and_register) -> Discovery:
    """The run's source listed and its files registered by `lister`."""
    assert run.source is not None, "a backlog run has a source"
    return lister(
        source=run.source.location,
        language=run.request.language,
        store=run.store,
        settle_s=run.settings.pipeline.settle_s,
        include=run.request.include,
        exclude=run.request.exclude,
        metadata=run.source.metadata,
    )


def listed_now(run: Run) -> Listed:
    """List and register the source now, while Prefect starts; the flow reports it (and
    raises what it raised, inside its run record)."""
    try:
        return Listed(discovery=list_source(run))
    except Exception as exc:
        return Listed(error=exc)


@dataclass(frozen=True)
class Listed:
    """The source listed and registered before the flow started (`medasr run` does it
    while Prefect's server boots): the discovery, or what it raised."""

    discovery: Discovery | None = None
    error: Exception | None = None

    def result(self) -> Discovery:
        """The discovery; raises what listing raised."""
        if self.error is not None:
            raise self.error
        assert self.discovery is not None
        return self.discovery
