"""Work run side by side under one shared context, each part let end before an error is
raised.

`asyncio.gather` raises the first error at once and leaves the other parts running; a
caller that then closes what they share (decode threads, an HTTP client, a batch's
claims) closes it under work in flight: a file's decoder met a shut-down pool, a
document on the wire was cut off and left in doubt. `all_ended` waits for every part.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar, cast

T = TypeVar("T")


async def all_ended(parts: Iterable[Awaitable[T]]) -> list[T]:
    """Every part's result once all have ended; the first error (in the parts' order) is
    raised only then. A cancellation of the caller still cancels every part."""
    ended = await asyncio.gather(*parts, return_exceptions=True)
    for outcome in ended:
        if isinstance(outcome, BaseException):
            raise outcome
    return cast(list[T], ended)
