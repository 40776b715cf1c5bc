"""The review workstation's speed and memory (not a test: prints figures beside targets).

1. The queue page with 10^4 and 10^5 held items: server time <= 150 ms.
2. A recording's page with 200 segments: server time <= 150 ms.
3. The first audio byte of a segment 50 minutes into a 60-minute mp3: <= 500 ms.
4. `medasr web`'s resident memory while N segments are served: flat.
5. A 60-minute recording's page in Debian's chromium (60 chunks of 60 s, so the waveform
   and its pause marks show): first contentful paint, and the waveform ready (peaks
   decoded, drawn, marks placed) on the first visit and from the cache; as ratios
   against a 9-second recording's page and a bare ffmpeg decode of the same file.

Server time is measured inside the ASGI application (request in to last body byte out),
over a real socket on loopback. Parts 1-3 serve in this process; part 4 runs
`medasr web` as a child and reads its VmRSS. `--segments N` sets part 4's count
(10^4 by default; a busy machine may take fewer, and the output says how many).

    .venv/bin/python bench/web_bench.py [--segments 10000] [--queue 10000,100000]
    .venv/bin/python bench/web_bench.py --only long-page   # part 5 alone
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from sqlalchemy import insert

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config.settings import StorageSettings  # noqa: E402
from config.workstation import WebSettings  # noqa: E402
from storage import open_review_store  # noqa: E402
from storage.models import ChunkRow, Item  # noqa: E402
from tasks.audio import find_ffmpeg  # noqa: E402
from tasks.review.accounts import add_reviewer  # noqa: E402
from tasks.review.recording_check import file_sha256  # noqa: E402
from web.app import build_app  # noqa: E402

PASSWORD = "bench password 1"
TARGET_MS = 150.0
FIRST_BYTE_TARGET_MS = 500.0
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class ServerClock:
    """ASGI middleware: how long each request took inside the application, ms."""

    def __init__(self, app: Any) -> None:
        self.app, self.times_ms = app, []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        start = time.perf_counter()

        async def timed(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.times_ms.append((time.perf_counter() - start) * 1000)

        await self.app(scope, receive, timed)


@contextmanager
def served(app: Any) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(
        uvicorn.Config(app, log_config=None, log_level="warning", access_log=False,
                       lifespan="off", http="h11", loop="asyncio")
    )  # fmt: skip
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def signed_in(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=60) as client:
        token = _CSRF.search(client.get("/login").text)
        assert token is not None
        form = {"name": "bench", "password": PASSWORD, "csrf_token": token[1]}
        client.post("/login", data=form)
        yield client


def fill_queue(engine: Any, *, count: int, start_id: int) -> None:
    """`count` held items in bulk (the bench measures reading them, not writing them)."""
    now = datetime.now(UTC)
    common = {
        "language": "en-IN", "source_version": "v1", "sha256": None, "size_bytes": 10,
        "duration_ms": 60_000, "status": "needs_review", "retryable": False, "attempts": 1,
        "text": "words " * 50, "flags": ["repetition"], "created_at": now,
    }  # fmt: skip
    rows = [
        {
            **common,
            "id": start_id + n,
            "source_uri": f"/archive/ward/{start_id + n:07d}.wav",
            "updated_at": now - timedelta(seconds=n),
        }
        for n in range(count)
    ]
    with engine.begin() as connection:
        for offset in range(0, len(rows), 5000):
            connection.execute(insert(Item.__table__), rows[offset : offset + 5000])


def fingerprint_of(path: Path) -> dict[str, Any]:
    """The columns a run records of a file (the workstation serves only that recording)."""
    stat = path.stat()
    return {
        "sha256": file_sha256(path), "size_bytes": stat.st_size,
        "source_version": str(stat.st_mtime_ns),
    }  # fmt: skip


def timed_pages(client: httpx.Client, clock: ServerClock, path: str, *, times: int) -> list[float]:
    clock.times_ms.clear()
    for _ in range(times):
        assert client.get(path).status_code == 200
    return list(clock.times_ms)


def queue_and_item(folder: Path, *, sizes: list[int]) -> None:
    store = open_review_store(StorageSettings(database_url=f"sqlite:///{folder / 'q.db'}"))
    with store.unit_of_work() as uow:
        add_reviewer(uow, name="bench", role="reviewer", password=PASSWORD)
    engine = store.engine  # type: ignore[attr-defined]
    clock = ServerClock(build_app(store, web=WebSettings(), tls=False))
    filled = 0
    with served(clock) as url, signed_in(url) as client:
        for size in sizes:
            fill_queue(engine, count=size - filled, start_id=filled + 1)
            filled = size
            times = timed_pages(client, clock, "/", times=20)
            print_figure(f"queue page, {size:,} held items", times)
            times = timed_pages(client, clock, "/?flag=repetition&language=en-IN", times=10)
            print_figure(f"queue page filtered, {size:,} held items", times)
        item_id = filled + 1
        fill_queue(engine, count=1, start_id=item_id)
        chunks = [
            {"item_id": item_id, "index": i + 1, "start_ms": i * 15_000, "end_ms": (i + 1) * 15_000,
             "size_bytes": 9, "status": "done", "text": "segment words " * 12, "attempts": 1,
             "updated_at": datetime.now(UTC)}
            for i in range(200)
        ]  # fmt: skip
        with engine.begin() as connection:
            connection.execute(insert(ChunkRow.__table__), chunks)
        print_figure(
            "recording page, 200 segments",
            timed_pages(client, clock, f"/items/{item_id}", times=20),
        )
    store.dispose()


def print_figure(name: str, times_ms: list[float]) -> None:
    median = statistics.median(times_ms)
    p95 = sorted(times_ms)[int(0.95 * (len(times_ms) - 1))]
    verdict = "ok" if p95 <= TARGET_MS else "OVER"
    print(f"| {name} | {median:.1f} ms | {p95:.1f} ms | <= {TARGET_MS:.0f} ms | {verdict} |")


def make_mp3(path: Path, *, seconds: int) -> None:
    subprocess.run(
        [find_ffmpeg(), "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
         f"sine=frequency=300:duration={seconds}", "-ac", "1", "-b:a", "32k", "-y", str(path)],
        check=True,
    )  # fmt: skip


def first_byte(folder: Path) -> None:
    mp3 = folder / "hour.mp3"
    make_mp3(mp3, seconds=3600)
    store = open_review_store(StorageSettings(database_url=f"sqlite:///{folder / 'a.db'}"))
    with store.unit_of_work() as uow:
        add_reviewer(uow, name="bench", role="reviewer", password=PASSWORD)
    fill_queue(store.engine, count=1, start_id=1)  # type: ignore[attr-defined]
    with store.engine.begin() as connection:  # type: ignore[attr-defined]
        connection.execute(
            Item.__table__.update().values(
                source_uri=str(mp3), duration_ms=3_600_000, **fingerprint_of(mp3)
            )
        )
    firsts = []
    with served(build_app(store, web=WebSettings(), tls=False)) as url, signed_in(url) as client:
        for _ in range(10):
            start = time.perf_counter()
            with client.stream("GET", "/items/1/audio?start_ms=3000000&end_ms=3015000") as answer:
                got = 0
                for piece in answer.iter_raw():
                    got += len(piece)
                    if got > 44:  # past the header: decoded audio
                        break
            firsts.append((time.perf_counter() - start) * 1000)
    store.dispose()
    median, worst = statistics.median(firsts), max(firsts)
    verdict = "ok" if worst <= FIRST_BYTE_TARGET_MS else "OVER"
    name = "first audio byte at 50:00 of a 60-min mp3"
    print(f"| {name} | {median:.0f} ms | {worst:.0f} ms (worst of 10) "
          f"| <= {FIRST_BYTE_TARGET_MS:.0f} ms | {verdict} |")  # fmt: skip


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_while_serving(folder: Path, *, segments: int) -> None:
    wav = folder / "ten.wav"
    subprocess.run(
        [find_ffmpeg(), "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
         "sine=frequency=300:duration=600", "-ac", "1", "-ar", "16000", "-y", str(wav)], check=True,
    )  # fmt: skip
    url_db = f"sqlite:///{folder / 'm.db'}"
    store = open_review_store(StorageSettings(database_url=url_db))
    with store.unit_of_work() as uow:
        add_reviewer(uow, name="bench", role="reviewer", password=PASSWORD)
    fill_queue(store.engine, count=1, start_id=1)  # type: ignore[attr-defined]
    with store.engine.begin() as connection:  # type: ignore[attr-defined]
        connection.execute(
            Item.__table__.update().values(
                source_uri=str(wav), duration_ms=600_000, **fingerprint_of(wav)
            )
        )
    store.dispose()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MEDASR_DATABASE_URL": url_db}
    child = subprocess.Popen(
        [str(ROOT / ".venv/bin/medasr"), "web", "--port", str(port)], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        child.stdout.readline()  # "serving ..."
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/login", timeout=1)
                break
            except httpx.TransportError:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("medasr web did not start") from None
                time.sleep(0.05)
        samples = []
        with signed_in(url) as client:
            for n in range(segments):
                start_ms = (n * 1000) % 590_000
                answer = client.get(f"/items/1/audio?start_ms={start_ms}&end_ms={start_ms + 2000}")
                assert answer.status_code == 200
                if n % max(segments // 10, 1) == 0 or n == segments - 1:
                    samples.append((n + 1, rss_kb(child.pid)))
        print(f"| medasr web VmRSS while {segments:,} segments are served | "
              + ", ".join(f"{n:,}: {kb / 1024:.0f} MB" for n, kb in samples) + " |")  # fmt: skip
    finally:
        child.terminate()
        child.wait(10)


_PAINT = "() => performance.getEntriesByName('first-contentful-paint')[0].startTime"
_READY = "[data-testid=waveform][data-ready=true]"


def browser_times(url: str, item_id: int, *, waveform: bool) -> tuple[float, float]:
    """(first contentful paint, waveform ready) in ms from navigation, in chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
        )
        page = browser.new_context(viewport={"width": 1366, "height": 768}).new_page()
        page.goto(f"{url}/login")
        page.fill("[data-testid=login-user]", "bench")
        page.fill("[data-testid=login-password]", PASSWORD)
        page.click("[data-testid=login-submit]")
        page.wait_for_url(f"{url}/")
        page.goto(f"{url}/items/{item_id}")
        page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint')[0]")
        paint = float(page.evaluate(_PAINT))
        ready = 0.0
        if waveform:
            page.wait_for_selector(_READY, timeout=120_000)
            ready = float(page.evaluate("() => performance.now()"))
        browser.close()
    return paint, ready


def long_recording_page(folder: Path) -> None:
    mp3 = folder / "hour-page.mp3"
    short = folder / "short-page.mp3"
    make_mp3(mp3, seconds=3600)
    make_mp3(short, seconds=9)
    store = open_review_store(StorageSettings(database_url=f"sqlite:///{folder / 'p.db'}"))
    with store.unit_of_work() as uow:
        add_reviewer(uow, name="bench", role="reviewer", password=PASSWORD)
    engine = store.engine  # type: ignore[attr-defined]
    fill_queue(engine, count=2, start_id=1)
    with engine.begin() as connection:
        for item_id, path, seconds in ((1, mp3, 3600), (2, short, 9)):
            connection.execute(
                Item.__table__.update().where(Item.id == item_id)
                .values(source_uri=str(path), duration_ms=seconds * 1000, **fingerprint_of(path))
            )  # fmt: skip
        step_s = {1: 60, 2: 3}
        chunks = [
            {"item_id": i, "index": n + 1, "start_ms": n * step_s[i] * 1000,
             "end_ms": (n + 1) * step_s[i] * 1000, "size_bytes": 9, "status": "done",
             "text": "segment words " * 40, "attempts": 1, "updated_at": datetime.now(UTC)}
            for i in (1, 2) for n in range(60 if i == 1 else 3)
        ]  # fmt: skip
        connection.execute(insert(ChunkRow.__table__), chunks)
    start = time.perf_counter()
    subprocess.run([find_ffmpeg(), "-nostdin", "-loglevel", "error", "-i", str(mp3),
                    "-ac", "1", "-ar", "8000", "-f", "null", "-"], check=True)  # fmt: skip
    decode_ms = (time.perf_counter() - start) * 1000
    with served(build_app(store, web=WebSettings(), tls=False)) as url:
        short_paint, _ = browser_times(url, 2, waveform=False)
        paint, cold = browser_times(url, 1, waveform=True)
        warm_paint, warm = browser_times(url, 1, waveform=True)
    store.dispose()
    print(f"| 60-min page: first contentful paint | {paint:.0f} ms (cached peaks: "
          f"{warm_paint:.0f} ms) | {paint / short_paint:.1f}x the 9-s page ({short_paint:.0f} ms) "
          "| first paint never waits for the waveform | - |")  # fmt: skip
    print(f"| 60-min page: waveform ready, first visit | {cold:.0f} ms | {cold / decode_ms:.1f}x "
          f"a bare ffmpeg decode ({decode_ms:.0f} ms) | - | - |")  # fmt: skip
    print(f"| 60-min page: waveform ready, peaks cached | {warm:.0f} ms | "
          f"{warm / cold:.2f}x the first visit | - | - |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=10_000)
    parser.add_argument("--queue", default="10000,100000")
    parser.add_argument("--only", choices=["long-page"], default=None)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print("| figure | median | p95 / worst | target | verdict |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="medasr-web-bench-") as folder:
        long_recording_page(Path(folder))
        if args.only:
            return
        queue_and_item(Path(folder), sizes=[int(s) for s in args.queue.split(",")])
        first_byte(Path(folder))
        memory_while_serving(Path(folder), segments=args.segments)


if __name__ == "__main__":
    main()
