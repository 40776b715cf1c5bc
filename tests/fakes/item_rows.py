"""The fake store's items as rows: find, put, hold under a claim (shared by its repositories).

The fake's item repositories (tests/fakes/store.py, item_listing.py, item_queries.py)
each hold the transaction's working state and reach its items through these functions,
as the SQL repositories share storage/queries.py's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from storage.errors import LeaseLost
from storage.records import ItemRecord

if TYPE_CHECKING:
    from tests.fakes.store import _State

NO_LEASE: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "lease_token": None}


def fake_now() -> datetime:
    """The fake's clock: the host's."""
    return datetime.now(UTC)


def find_row(state: _State, uri: str, language: str) -> ItemRecord | None:
    """The item of `uri` in `language`, if any."""
    for item in state.items.values():
        if (item.source_uri, item.language) == (uri, language):
            return item
    return None


def put_row(state: _State, item: ItemRecord) -> None:
    """Store `item` (new or replacing its earlier self)."""
    state.items[item.id] = item


def next_item_id(state: _State) -> int:
    """A fresh item id."""
    item_id, state.next_id = state.next_id, state.next_id + 1
    return item_id


def held_row(state: _State, item_id: int, lease_token: str | None) -> ItemRecord:
    """The item our claim holds; raises LeaseLost when the claim is no longer current."""
    item = state.items.get(item_id)
    if (
        item is None
        or lease_token is None
        or (item.status, item.lease_token) != ("processing", lease_token)
    ):
        raise LeaseLost(f"item {item_id} is no longer held by this worker")
    return item


def drop_chunks(state: _State, item_id: int) -> None:
    """Forget an item's chunks."""
    for key in [k for k in state.chunks if k[0] == item_id]:
        del state.chunks[key]


def under(uri: str, prefix: str) -> bool:
    """The source itself or anything below it (a folder boundary, not a name prefix)."""
    return uri == (prefix.rstrip("/") or prefix) or uri.startswith(prefix.rstrip("/") + "/")
