"""Which path a local source's recordings are known by in this store.

medasr keys a local source's recordings under its real path (storage/sources.py resolves
symbolic links), so a folder named through a link is registered once. A store whose
earlier runs named the source through a link knows its recordings under the link's
path: keyed again under the real path, each would be a second recording whose note
`deliver` files again, and the ones registered before would stay pending, outside the
run's prefix. So such a source keeps the path the store knew it by.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from storage.interface import UnitOfWorkFactory
from storage.sources import SourceLocation
from tasks.transcription.bookkeeping import known_sources

logger = logging.getLogger("medasr.run")


def location_as_known(location: SourceLocation, *, store: UnitOfWorkFactory) -> SourceLocation:
    """`location`, or its path as named when the store's earlier runs knew it by that."""
    given = location.given
    if given is None or given not in known_sources(store):
        return location
    logger.warning(
        "%s leads to %s; this store knows its recordings by %s (earlier runs named it so): "
        "kept, so none is registered or filed twice",
        given,
        location.path,
        given,
    )
    return replace(location, path=given, given=None)
