"""Fetch and fingerprint a source file from async code, in one read, off the event loop.

`storage.sources.fetch_and_fingerprint` hashes a remote object while it copies it (and a
local file once, in place); the download and the hash run in a worker thread so that
the requests in flight never wait behind them. A copy is removed when the block ends,
even when the task is cancelled while the copy is still being written.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from storage.sources import FetchedFile, fetch_and_fingerprint, parse_source


@asynccontextmanager
async def fetched_file(
    uri: str, *, storage_options: Mapping[str, Any] | None
) -> AsyncIterator[FetchedFile]:
    """A local path to the file and its fingerprint; raises SourceError subclasses."""
    opened = fetch_and_fingerprint(uri, storage_options=storage_options)
    entering = asyncio.ensure_future(asyncio.to_thread(opened.__enter__))
    try:
        fetched = await asyncio.shield(entering)
    except asyncio.CancelledError:
        # The thread goes on copying: let it end, then remove what it wrote.
        with contextlib.suppress(Exception):
            await entering
            await asyncio.to_thread(opened.__exit__, None, None, None)
        raise
    try:
        yield fetched
    finally:
        if parse_source(uri).protocol is None:
            opened.__exit__(None, None, None)  # a local file: nothing to remove, no thread hop
        else:
            await asyncio.to_thread(opened.__exit__, None, None, None)
