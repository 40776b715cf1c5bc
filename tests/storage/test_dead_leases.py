"""Taking back items whose lease owner is a process of this machine that has ended.

A `medasr run` killed with SIGKILL leaves its claimed items `processing` under a lease
(900 s by default); the next run on the same host gives them back at once. Owners that
still run, owners of other hosts, and this process's own owners are never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from storage.interface import UnitOfWorkFactory
from storage.owners import is_dead_local_owner, local_host_id, new_lease_owner
from storage.records import ItemRecord, SourceFile

LANG = "en-IN"


@pytest.fixture
def ended_pid() -> int:
    """The pid of a process that has run and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def zombie_pid() -> Iterator[int]:
    """The pid of a process that has ended but was not reaped yet."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{child.pid}/stat", "rb") as handle:
            if handle.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                break
        time.sleep(0.01)
    yield child.pid
    child.wait()


@pytest.fixture
def running_pid() -> Iterator[int]:
    child = subprocess.Popen(["sleep", "60"])
    yield child.pid
    child.kill()
    child.wait()


def owner_of(pid: int, *, host: str | None = None) -> str:
    return f"{host or local_host_id()}:{pid}:0123abcd"


def claim_one(store: UnitOfWorkFactory, uri: str, owner: str) -> ItemRecord:
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(uri, 10, "v1")], language=LANG)
        (item,) = uow.claims.claim_batch(owner=owner, language=LANG, limit=1, lease_s=900)
    return item


def test_owner_names_carry_this_host_and_pid() -> None:
    host, pid, random = new_lease_owner().split(":")
    assert host == local_host_id()
    assert int(pid) > 0
    assert len(random) == 12


@pytest.mark.parametrize(
    ("which", "dead"),
    [("ended", True), ("zombie", True), ("running", False), ("this process", False)],
)
def test_is_dead_local_owner(which: str, dead: bool, request: pytest.FixtureRequest) -> None:
    pid = {
        "ended": lambda: request.getfixturevalue("ended_pid"),
        "zombie": lambda: request.getfixturevalue("zombie_pid"),
        "running": lambda: request.getfixturevalue("running_pid"),
        "this process": os.getpid,
    }[which]()
    assert is_dead_local_owner(owner_of(pid)) is dead


@pytest.mark.parametrize(
    "owner",
    ["other-host:1:abc", "garbage", "", f"{local_host_id()}:not-a-pid:x"],
    ids=["other-host", "no-separators", "empty", "pid-not-a-number"],
)
def test_foreign_or_malformed_owners_are_never_dead(owner: str) -> None:
    assert not is_dead_local_owner(owner)


def test_items_of_an_ended_local_process_go_back_to_pending(
    store: UnitOfWorkFactory, ended_pid: int, running_pid: int
) -> None:
    dead = claim_one(store, "/a/killed.wav", owner_of(ended_pid))
    alive = claim_one(store, "/a/working.wav", owner_of(running_pid))
    remote = claim_one(store, "/a/remote.wav", owner_of(ended_pid, host="other-host"))

    with store.unit_of_work() as uow:
        released = uow.claims.release_dead_local_leases()
        again = uow.claims.release_dead_local_leases()

    assert (released, again) == (1, 0)
    with store.unit_of_work(read_only=True) as uow:
        after = {item.id: uow.item_queries.get_item(item.id) for item in (dead, alive, remote)}
    assert (after[dead.id].status, after[dead.id].lease_owner) == ("pending", None)
    assert after[dead.id].attempts == 1  # the crash may have been the item's doing
    assert after[alive.id].status == after[remote.id].status == "processing"
    with store.unit_of_work() as uow:
        (reclaimed,) = uow.claims.claim_batch(
            owner=new_lease_owner(), language=LANG, limit=5, lease_s=9
        )
    assert reclaimed.id == dead.id
    assert reclaimed.attempts == 2
