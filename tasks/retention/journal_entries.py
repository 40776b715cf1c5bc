"""Journal entries of purged recordings: the answers kept on disk carry their text too.

Entries are named after what they hold (tasks/work/journal.py): `<item>-<chunk>-<rand>.json`
for a chunk answer, `deliveries/delivery-<id>-<rand>.json` for an accepted upload, and a
`.<name>.tmp` while being written. Only the entries of the purged items and their
deliveries are removed; everything else in the data dir is left as it is.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from pathlib import Path

_CHUNK = re.compile(r"^\.?(\d+)-\d+-[0-9a-f]+\.(json|tmp)$")
_DELIVERY = re.compile(r"^\.?delivery-(\d+)-[0-9a-f]+\.(json|tmp)$")


def remove_journal_entries(
    journal_folder: Path, *, item_ids: Iterable[int], delivery_ids: Iterable[int]
) -> int:
    """Remove the entries of these items and deliveries; returns how many files went."""
    items, deliveries = set(item_ids), set(delivery_ids)
    removed = _remove(journal_folder, _CHUNK, items)
    removed += _remove(journal_folder / "deliveries", _DELIVERY, deliveries)
    return removed


def _remove(folder: Path, pattern: re.Pattern[str], ids: set[int]) -> int:
    if not ids or not folder.is_dir():
        return 0
    removed = 0
    for path in folder.iterdir():
        found = pattern.match(path.name)
        if found is None or int(found.group(1)) not in ids:
            continue
        with contextlib.suppress(FileNotFoundError):  # replayed meanwhile
            path.unlink()
            removed += 1
    return removed
