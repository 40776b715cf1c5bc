"""Issue 23 §4: `medasr run` and `rerun-failures` send requests while Prefect starts.

The temporary server is held before it imports anything by a `sitecustomize` (as in
test_prefect_lifetime.py), here until the test creates a file: while it is held, the
server cannot answer, so requests that reach the devserver were sent before the
command's wait for the API returned. Then the server is let go and the flow carries on.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
import soundfile

from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from flows import batch_loops
from flows.cli.flow_run import SLOTS_FILL_S, flows_import_due
from flows.prefect_runtime.head_start import HeadStart
from flows.setup.bootstrap import Run, RunRequest, bootstrap
from tasks.discovery.discover import discover_and_register
from tests.flows.prefect_server import MEDASR, clean_env, free_port
from tests.helpers.flows import settings_for
from tests.helpers.processes import processes_with, servers_left, wait_for

TOKEN = "head-start-token"
HOLD = """\
import os, sys, time
if "prefect.server.api.server:create_app" in sys.orig_argv:
    while not os.path.exists(os.environ["RELEASE_PREFECT"]):
        time.sleep(0.05)
"""


def recordings(root: Path, count: int) -> Path:
    """`count` distinct one-chunk dictations (distinct content: no answer is reused)."""
    root.mkdir()
    for n in range(count):
        text = f"note {n}. review in {n + 2} weeks."
        soundfile.write(root / f"n{n}.wav", encode_tone_dictation(text), 16000, subtype="PCM_16")
    return root


@pytest.fixture
def service() -> Iterator[RunningDevServer]:
    with start_devserver(token=TOKEN, port=0, engine="tone", latency_ms=1500) as server:
        yield server


_STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """A test that fails while Prefect is held leaves no `medasr` waiting for it."""
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)  # its own session: medasr, its server
            process.wait()


class HeldRun:
    """`medasr` with Prefect's temporary server held until `release()`."""

    def __init__(self, tmp_path: Path, server: RunningDevServer, **extra: str) -> None:
        hook = tmp_path / "hold"
        hook.mkdir(exist_ok=True)
        (hook / "sitecustomize.py").write_text(HOLD)
        self.tmp_path = tmp_path
        self.release_file = tmp_path / "release"
        self.env = (
            clean_env(
                tmp_path / "prefect",
                MEDASR_BASE_URL=server.url,
                MEDASR_TOKEN=TOKEN,
                MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
                MEDASR_PIPELINE__SETTLE_S="0",
                MEDASR_BATCH_SIZE="2",
                MEDASR_CONCURRENCY="2",
                PYTHONPATH=str(hook),
                RELEASE_PREFECT=str(self.release_file),
            )
            | extra
        )
        self.home = Path(self.env["PREFECT_HOME"])
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *args: str) -> HeldRun:
        with (
            (self.tmp_path / "out.log").open("wb") as out,
            (self.tmp_path / "err.log").open("wb") as err,
        ):
            self.process = subprocess.Popen(
                [MEDASR, *args, "--quiet"],
                env=self.env,
                cwd=self.tmp_path,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        _STARTED.append(self.process)
        return self

    def release(self) -> None:
        self.release_file.touch()

    def running(self) -> bool:
        assert self.process is not None
        return self.process.poll() is None

    def wait(self) -> int:
        assert self.process is not None
        return self.process.wait(timeout=300)

    def stderr(self) -> str:
        return (self.tmp_path / "err.log").read_text(errors="replace")

    def stdout(self) -> str:
        return (self.tmp_path / "out.log").read_text(errors="replace")

    def rows(self, query: str) -> list[tuple[object, ...]]:
        with closing(sqlite3.connect(self.tmp_path / "medasr.db")) as db:
            return list(db.execute(query))


def arrived(service: RunningDevServer) -> int:
    """Requests the devserver has seen arrive (answered or still in flight)."""
    return max(len(service.ledger), service.state.capacity.peak_in_flight)


def test_requests_go_out_while_prefect_starts_and_the_flow_counts_them(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 8)
    held = HeldRun(tmp_path, service).start("run", str(source), "-l", "en-IN")

    wait_for(lambda: arrived(service) or not held.running(), timeout_s=120, what="request")
    assert held.running(), held.stderr()
    assert not held.release_file.exists()  # Prefect is held: no API could have answered
    held.release()

    assert held.wait() == 0, held.stderr()
    assert len(service.ledger) == 8  # each file once: nothing claimed twice
    assert [e.status for e in service.ledger.entries()] == [200] * 8
    assert held.rows("SELECT DISTINCT status FROM items") == [("done",)]
    # One run row covers the files sent before the flow started and after.
    assert held.rows("SELECT status, files, done, requests FROM runs") == [("done", 8, 8, 8)]
    assert servers_left(held.home) == []


def test_limit_counts_the_files_of_the_head_start(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 6)
    held = HeldRun(tmp_path, service).start("run", str(source), "-l", "en-IN", "--limit", "3")

    wait_for(lambda: arrived(service) or not held.running(), timeout_s=120, what="request")
    held.release()

    assert held.wait() == 0, held.stderr()
    assert len(service.ledger) == 3
    assert held.rows("SELECT status, count(*) FROM items GROUP BY status ORDER BY status") == [
        ("done", 3),
        ("pending", 3),
    ]
    assert held.rows("SELECT files, done FROM runs") == [(3, 3)]


def test_ctrl_c_while_prefect_starts_records_the_finished_files_and_leaves_nothing(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 6)
    held = HeldRun(tmp_path, service).start("run", str(source), "-l", "en-IN")
    wait_for(lambda: arrived(service) or not held.running(), timeout_s=120, what="request")
    assert held.running(), held.stderr()
    assert held.process is not None

    os.kill(held.process.pid, signal.SIGINT)

    assert held.wait() == 130, held.stderr()
    ours = [line for line in held.stderr().splitlines() if line.startswith("medasr:")]
    assert ours[-1] == (
        "medasr: interrupted: finished files are recorded, the others are pending; "
        "run the same command again to go on"
    )
    assert "Traceback" not in held.stderr()
    statuses = dict(held.rows("SELECT status, count(*) FROM items GROUP BY status"))
    assert statuses.get("done", 0) == len(service.ledger) > 0  # the paid answers are kept
    assert statuses.get("done", 0) + statuses.get("pending", 0) == 6
    assert servers_left(held.home) == []  # no Prefect server
    assert processes_with(held.home) == []  # nor ffmpeg, nor anything else it started


def test_credentials_rejected_while_prefect_starts_exit_3_with_the_line(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 4)
    held = HeldRun(tmp_path, service, MEDASR_TOKEN="not-the-token")
    held.start("run", str(source), "-l", "en-IN")
    wait_for(lambda: arrived(service) or not held.running(), timeout_s=120, what="request")
    held.release()

    assert held.wait() == 3, held.stderr()
    ours = [line for line in held.stderr().splitlines() if line.startswith("medasr:")]
    assert ours[-1].startswith("medasr: stopped: credentials rejected:"), ours
    assert "MEDASR_TOKEN" in ours[-1]
    assert {e.status for e in service.ledger.entries()} <= {401, 403}
    assert len(service.ledger) > 0
    assert held.rows("SELECT DISTINCT status FROM items") == [("pending",)]


def test_a_shared_limit_waits_for_prefect_before_any_request(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 2)
    held = HeldRun(
        tmp_path, service, MEDASR_GLOBAL_CONCURRENCY="2", MEDASR_PREFECT_START_TIMEOUT_S="180"
    )
    held.start("run", str(source), "-l", "en-IN")
    # Said once the wait passes 5 s: a head start would have sent by then.
    wait_for(
        lambda: "waiting for Prefect" in held.stdout() or not held.running(),
        timeout_s=120,
        what="notice",
    )
    assert arrived(service) == 0, held.stderr()
    held.release()

    assert held.wait() == 0, held.stderr()
    assert len(service.ledger) == 2


@pytest.mark.slow
def test_rerun_failures_requeues_then_sends_while_prefect_starts(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 4)
    first = HeldRun(tmp_path, service)
    first.release()
    first.start("run", str(source), "-l", "en-IN")
    assert first.wait() == 0, first.stderr()
    with closing(sqlite3.connect(tmp_path / "medasr.db")) as db, db:
        db.execute("DELETE FROM chunks")  # no answer to reuse: each file is sent again
        db.execute("UPDATE items SET status = 'failed', text = NULL")
    first.release_file.unlink()
    sent_before = len(service.ledger)

    held = HeldRun(tmp_path, service).start("rerun-failures", "--include-permanent")
    wait_for(
        lambda: arrived(service) > sent_before or not held.running(), timeout_s=120, what="request"
    )
    assert held.running(), held.stderr()
    held.release()

    assert held.wait() == 0, held.stderr()
    assert len(service.ledger) == sent_before + 4
    assert held.rows("SELECT DISTINCT status FROM items") == [("done",)]
    assert held.rows("SELECT files, done FROM runs ORDER BY id DESC LIMIT 1") == [(4, 4)]


def test_the_journal_is_replayed_before_the_head_start_sends(
    tmp_path: Path, service: RunningDevServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = recordings(tmp_path / "s", 3)
    settings = settings_for(service, tmp_path / "medasr.db", token=TOKEN)
    request = RunRequest(language="en-IN", source=str(source))
    requests_at_replay: list[int] = []
    replay = batch_loops.replay_journal  # the drain's set-up, the head start's too

    def observed_replay(*args: object, **kwargs: object) -> object:
        requests_at_replay.append(arrived(service))
        return replay(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(batch_loops, "replay_journal", observed_replay)

    with bootstrap(settings, request) as run:
        assert run.source is not None
        discover_and_register(
            source=run.source.location, language="en-IN", store=run.store, settle_s=0.0
        )

        async def head_start_alone() -> None:
            head = HeadStart(run)
            await head.prepared()
            async with asyncio.timeout(120):  # until the three files are answered
                while len(service.ledger) < 3:
                    await asyncio.sleep(0.05)
            await head.stop()

        asyncio.run(head_start_alone())

    assert requests_at_replay == [0]
    assert len(service.ledger) == 3


def test_an_api_named_by_a_prefect_profile_is_checked_before_anything_is_sent(
    tmp_path: Path, service: RunningDevServer
) -> None:
    source = recordings(tmp_path / "s", 2)
    held = HeldRun(tmp_path, service)
    url = f"http://127.0.0.1:{free_port()}/api"
    (held.home / "profiles.toml").write_text(
        f'active = "default"\n\n[profiles.default]\nPREFECT_API_URL = "{url}"\n'
    )
    held.start("run", str(source), "-l", "en-IN")

    assert held.wait() == 2, held.stderr()
    ours = [line for line in held.stderr().splitlines() if line.startswith("medasr:")]
    assert len(ours) == 1, held.stderr()
    assert ours[0].startswith("medasr: configuration error: no Prefect server answers")
    assert f"PREFECT_API_URL={url}" in ours[0]
    assert arrived(service) == 0  # a profile's API is checked first, like the environment's


def bootstrapped_head_start_watch(
    tmp_path: Path,
    service: RunningDevServer,
    *,
    files: int,
    pipeline: dict[str, object],
    watch: Callable[[HeadStart, Run], Awaitable[None]],
) -> None:
    """`watch(head, run)` over a head start on `files` one-chunk dictations, the pipeline
    settings changed by `pipeline`; the head start stopped after."""
    source = recordings(tmp_path / "s", files)
    settings = settings_for(service, tmp_path / "medasr.db", token=TOKEN)
    changed = settings.pipeline.model_copy(update=pipeline)
    settings = settings.model_copy(update={"pipeline": changed})
    with bootstrap(settings, RunRequest(language="en-IN", source=str(source))) as run:
        assert run.source is not None
        discover_and_register(
            source=run.source.location, language="en-IN", store=run.store, settle_s=0.0
        )

        async def watched() -> None:
            head = HeadStart(run)
            try:
                await head.prepared()
                async with asyncio.timeout(120):
                    await watch(head, run)
            finally:
                await head.stop()

        asyncio.run(watched())


async def requests_sent(run: Run, count: int) -> None:
    while run.stats.requests < count:
        await asyncio.sleep(0.005)


def test_the_flows_are_imported_once_every_request_slot_has_had_a_request(
    tmp_path: Path, service: RunningDevServer
) -> None:
    """Not at the first request: the import's CPU would slow the decoding of the files
    that fill the other slots (flows_import_due). Three files for two slots, one request
    started a second, each answered 1.5 s after it is sent."""
    due: dict[str, bool] = {}

    async def watch(head: HeadStart, run: Run) -> None:
        due["no head start"] = flows_import_due(None, run=run, api_ready=False)
        due["before any request"] = flows_import_due(head, run=run, api_ready=False)
        await requests_sent(run, 1)
        due["one slot of two"] = flows_import_due(
            head, run=run, api_ready=False, since_first_request_s=0.0
        )
        due["the API answers"] = flows_import_due(head, run=run, api_ready=True)
        due["the slots still filling"] = flows_import_due(
            head, run=run, api_ready=False, since_first_request_s=SLOTS_FILL_S
        )
        await requests_sent(run, 2)
        due["both slots"] = flows_import_due(head, run=run, api_ready=False)

    bootstrapped_head_start_watch(
        tmp_path, service, files=3, pipeline={"concurrency": 2, "requests_per_s": 1.0}, watch=watch
    )
    assert due == {
        "no head start": True,
        "before any request": False,
        "one slot of two": False,
        "the API answers": True,
        "the slots still filling": True,  # paced or throttled: not held until the API
        "both slots": True,
    }
    assert len(service.ledger) == 3


def test_fewer_files_than_slots_import_the_flows_once_each_has_a_request(
    tmp_path: Path, service: RunningDevServer
) -> None:
    due: dict[str, bool] = {}

    async def watch(head: HeadStart, run: Run) -> None:
        due["before its request"] = flows_import_due(head, run=run, api_ready=False)
        await requests_sent(run, 1)
        due["its request out"] = flows_import_due(head, run=run, api_ready=False)

    bootstrapped_head_start_watch(
        tmp_path, service, files=1, pipeline={"concurrency": 4}, watch=watch
    )
    assert due == {"before its request": False, "its request out": True}
