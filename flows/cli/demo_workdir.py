"""The demo's folder (`medasr demo --workdir`, .demo/ by default): made and started over.

`--fresh` deletes the folder, so it deletes only a folder the demo made: one holding the
mark the demo leaves in a folder it creates, and nothing but what the demo writes there
(its SQLite store and data folder). A folder a person named by mistake (`--workdir .`,
a real store's folder, a dictation archive) is refused, with what it holds, and left as
it is. An empty or missing folder is the demo's to make.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

from config.errors import ConfigError
from config.private_files import make_private_folders

DEMO_MARK: Final = ".medasr-demo"  # in a folder the demo made: its own to delete
_DEMO_WRITES: Final = frozenset(
    {DEMO_MARK, "data", "medasr.db", "medasr.db-wal", "medasr.db-shm", "medasr.db-journal"}
)


def prepare_workdir(workdir: Path, *, fresh: bool) -> bool:
    """Make `workdir` (emptied first with `fresh`); True when it holds an earlier demo's
    store (the demo resumes it). Raises ConfigError for a folder `fresh` may not delete,
    or a `workdir` that is not a folder."""
    if workdir.exists() and not workdir.is_dir():
        raise ConfigError(f"demo: --workdir {workdir} is a file, not a folder")
    if fresh and workdir.exists():
        _require_demos_own(workdir)
        shutil.rmtree(workdir)
    resumed = (workdir / "medasr.db").exists()
    made = not workdir.exists() or not any(workdir.iterdir())
    make_private_folders(workdir)
    if made:
        (workdir / DEMO_MARK).touch()
    return resumed


def _require_demos_own(workdir: Path) -> None:
    """ConfigError unless `workdir` is empty, or was made by the demo and holds only what
    the demo writes."""
    held = sorted(entry.name for entry in workdir.iterdir())
    if not held:
        return
    foreign = [name for name in held if name not in _DEMO_WRITES]
    if DEMO_MARK in held and not foreign:
        return
    shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
    why = "the demo did not make it"
    if foreign:
        why = f"it holds {shown}, which the demo did not write"
    raise ConfigError(
        f"demo --fresh deletes only a folder the demo made; {workdir} is kept ({why}): "
        "name another --workdir, or delete the folder yourself"
    )
