"""The source listed and registered before the flow, or what listing raised."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.discovery.discover import Discovery


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
