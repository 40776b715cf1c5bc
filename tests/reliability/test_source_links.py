"""A source folder reached through a symbolic link is the folder it leads to: one item, one
note filed to the record, whatever link the user named.

The bad-input hunt's reproduction: `slsrc/a.wav`, `sllink -> slsrc`, `medasr run slsrc`
then `medasr run sllink`. Before: the second run registered `sllink/a.wav` as a second
recording (content reuse: no request), `status` said done 2 and `deliver` filed the note
twice (two documents with one sha256 at the record platform).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import StorageSettings
from devserver.ledger import TRANSCRIBE_PATH
from storage import open_store
from storage.records import SourceFile
from tests.reliability.corpus import age_files, write_tone_wav
from tests.reliability.evidence import items
from tests.reliability.harness import Finished

pytestmark = pytest.mark.slow  # two runs, a status and a deliver: ~60 s


def linked_source(tmp_path: Path) -> tuple[Path, Path]:
    """slsrc/a.wav (a dictation old enough to be listed) and sllink -> slsrc."""
    source = tmp_path / "slsrc"
    write_tone_wav(source / "a.wav", "one note. filed once.")
    age_files(source)
    link = tmp_path / "sllink"
    link.symlink_to(source, target_is_directory=True)
    return source, link


def test_a_folder_reached_through_a_link_is_one_recording_delivered_once(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str]
) -> None:
    server = tone_devserver()
    source, link = linked_source(tmp_path)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database_url, **prefect_api)

    runs: list[Finished] = [
        medasr.run("run", str(source), "-l", "en-IN"),
        medasr.run("run", str(link), "-l", "en-IN"),
        medasr.run("run", f"{link}/", "-l", "en-IN"),
    ]
    status = medasr.run("status")
    delivered = medasr.run("deliver", "--allow-unlinked")

    for finished in runs:
        assert finished.returncode == 0, finished.describe()
    assert [r["source_uri"] for r in items(database_url)] == [str(source / "a.wav")]
    assert runs[1].summary()["files_done"] == "0", runs[1].describe()
    assert "en-IN done 1" in " ".join(status.stdout.split()), status.describe()
    assert delivered.returncode == 0, delivered.describe()
    received = server.state.received.as_json()
    assert [document["filename"] for document in received] == ["a.txt"]
    sent = [e for e in server.ledger.entries() if e.path == TRANSCRIBE_PATH and e.bytes > 0]
    assert len(sent) == 1  # transcribed once


def test_a_store_that_knew_a_source_by_its_links_path_keeps_knowing_it_so(
    tmp_path: Path, tone_devserver, medasr_for, prefect_api: dict[str, str]
) -> None:
    """Runs of an earlier medasr named `sllink` and registered `sllink/a.wav`: after the
    upgrade the same command goes on with those recordings, not a second copy of each
    at the real path (whose notes `deliver` would file again)."""
    server = tone_devserver()
    _, link = linked_source(tmp_path)
    database_url = f"sqlite:///{tmp_path / 'medasr.db'}"
    medasr = medasr_for(server, database_url, **prefect_api)
    assert medasr.run("db", "upgrade").returncode == 0
    as_before = tmp_path / "sllink" / "a.wav"
    store = open_store(StorageSettings(database_url=database_url))
    with store.unit_of_work() as uow:  # what an earlier medasr left
        uow.runs.start_run(source=str(link), language="en-IN")
        size, version = as_before.stat().st_size, str(as_before.stat().st_mtime_ns)
        uow.items.register_items([SourceFile(str(as_before), size, version)], language="en-IN")
    store.dispose()

    finished = medasr.run("run", str(link), "-l", "en-IN")

    assert finished.returncode == 0, finished.describe()
    assert [(r["source_uri"], r["status"]) for r in items(database_url)] == [
        (str(as_before), "done")
    ]
