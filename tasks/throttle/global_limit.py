"""One request limit for every worker: a Prefect global concurrency limit, shared by all.

With the setting, each HTTP attempt holds a slot of the limit `medasr-requests` on the
Prefect server the run talks to, so all workers of that server keep at most N requests
in flight together; MEDASR_REQUESTS_PER_S then paces attempts through a second limit,
`medasr-requests-rate`, whose slots decay at R per second (Prefect's rate_limit).
Without the setting none of this runs and no Prefect call is made per request.

Fail closed: when the Prefect server cannot give a slot, no request goes out; the run
stops with SharedLimitUnavailable (a ConfigError: exit 2, items left pending), because
sending without the shared limit would multiply the load on the vendor by the number of
workers, which is what the setting exists to prevent.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import httpx
from prefect.client.orchestration import PrefectClient, get_client
from prefect.client.schemas.actions import (
    GlobalConcurrencyLimitCreate,
    GlobalConcurrencyLimitUpdate,
)
from prefect.concurrency.asyncio import (
    ConcurrencySlotAcquisitionError,
    concurrency,
    rate_limit,
)
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from tasks.errors import SharedLimitUnavailable

logger = logging.getLogger("medasr.global_limit")

GLOBAL_LIMIT_NAME: Final = "medasr-requests"
RATE_LIMIT_NAME: Final = "medasr-requests-rate"
# A slot is held for one HTTP attempt; Prefect renews its lease while it is held.
_LEASE_S: Final = 300.0
# What a Prefect server that is down or refusing looks like from here.
_PREFECT_UNREACHABLE: Final = (ConcurrencySlotAcquisitionError, httpx.HTTPError, OSError)


class SharedLimit:
    """The Prefect-held limits one run's requests share with every other worker's."""

    def __init__(self, *, requests_per_s: float | None) -> None:
        self._rate_limited = requests_per_s is not None

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot of `medasr-requests`; raises SharedLimitUnavailable (fail closed)."""
        acquired = False
        try:
            async with concurrency(
                GLOBAL_LIMIT_NAME, occupy=1, lease_duration=_LEASE_S, strict=True
            ):
                acquired = True
                yield
        except _PREFECT_UNREACHABLE as exc:
            if acquired:  # the request's own error, not the limit's
                raise
            raise _unavailable(GLOBAL_LIMIT_NAME, exc) from exc

    async def pace(self) -> None:
        """Wait for the shared rate limit, when one is set; raises SharedLimitUnavailable."""
        if not self._rate_limited:
            return
        try:
            await rate_limit(RATE_LIMIT_NAME, occupy=1, strict=True)
        except _PREFECT_UNREACHABLE as exc:
            raise _unavailable(RATE_LIMIT_NAME, exc) from exc


async def ensure_shared_limits(*, limit: int, requests_per_s: float | None) -> SharedLimit:
    """Create or update the Prefect limits for this run; raises SharedLimitUnavailable."""
    try:
        async with get_client() as client:
            await _ensure_limit(client, GLOBAL_LIMIT_NAME, limit=limit, decay_per_s=None)
            if requests_per_s is not None:
                slots = max(1, math.ceil(requests_per_s))  # one second's worth, at least one
                await _ensure_limit(
                    client, RATE_LIMIT_NAME, limit=slots, decay_per_s=float(requests_per_s)
                )
    except _PREFECT_UNREACHABLE as exc:
        raise _unavailable(GLOBAL_LIMIT_NAME, exc) from exc
    return SharedLimit(requests_per_s=requests_per_s)


async def _ensure_limit(
    api: PrefectClient, name: str, *, limit: int, decay_per_s: float | None
) -> None:
    """Create `name` with `limit` slots if missing, else update it if it differs; log which."""
    try:
        current = await api.read_global_concurrency_limit_by_name(name)
    except ObjectNotFound:
        current = None
    if current is None:
        create = GlobalConcurrencyLimitCreate(
            name=name, limit=limit, slot_decay_per_second=decay_per_s or 0.0
        )
        try:
            await api.create_global_concurrency_limit(create)
        except ObjectAlreadyExists:  # another worker created it a moment ago
            current = await api.read_global_concurrency_limit_by_name(name)
        else:
            logger.info("created the Prefect concurrency limit %r with %d slots", name, limit)
            return
    decay = decay_per_s or 0.0
    if current.limit == limit and math.isclose(current.slot_decay_per_second or 0.0, decay):
        logger.info("using the Prefect concurrency limit %r (%d slots)", name, limit)
        return
    update = GlobalConcurrencyLimitUpdate(limit=limit, slot_decay_per_second=decay)
    await api.update_global_concurrency_limit(name, update)
    logger.info(
        "updated the Prefect concurrency limit %r from %d to %d slots", name, current.limit, limit
    )


def _unavailable(name: str, exc: BaseException) -> SharedLimitUnavailable:
    return SharedLimitUnavailable(
        f"the Prefect server holding the shared request limit {name!r} did not answer "
        f"({type(exc).__name__}); no request was sent without it. Check PREFECT_API_URL, "
        "or unset MEDASR_GLOBAL_CONCURRENCY to run without a shared limit"
    )
