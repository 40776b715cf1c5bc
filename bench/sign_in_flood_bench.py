"""A signed-in reviewer's page while sign-ins flood the workstation (not a test: figures).

Twelve clients (threads of a child process, so their Python does not share this
process's lock with the server) post wrong passwords for guessed names as fast as the
server answers; meanwhile a signed-in client reads the queue page. Three rounds: no
flood, the flood against the defaults (throttle and bounded verifications), and the
flood with the throttle lifted (the bound on verifications alone). Printed: the page's
median and worst, and each round's median over the no-flood median (the ratio is what
holds on a busy shared host; wall-clock times do not).

    .venv/bin/python bench/sign_in_flood_bench.py [--pages 15] [--clients 12]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config.settings import StorageSettings  # noqa: E402
from storage import open_review_store  # noqa: E402
from tasks.review.accounts import add_reviewer  # noqa: E402
from tests.helpers.review import PASSWORD  # noqa: E402
from tests.web.workstation import serve, sign_in  # noqa: E402
from web.throttle import SignInThrottle  # noqa: E402

FLOOD = """
import sys, threading, re, httpx
url, clients = sys.argv[1], int(sys.argv[2])
token = re.compile(r'name="csrf_token" value="([^"]+)"')
def run(k):
    with httpx.Client(base_url=url, timeout=120) as c:
        n = 0
        while True:
            t = token.search(c.get("/login").text).group(1)
            c.post("/login", data={"name": f"g{k}x{n}", "password": "wrong pw", "csrf_token": t})
            n += 1
for k in range(clients):
    threading.Thread(target=run, args=(k,), daemon=True).start()
threading.Event().wait()
"""


def page_times(client: httpx.Client, *, pages: int) -> list[float]:
    times = []
    for _ in range(pages):
        start = time.perf_counter()
        assert client.get("/").status_code == 200
        times.append(time.perf_counter() - start)
    return times


def one_round(url: str, client: httpx.Client, *, flood: int, pages: int) -> list[float]:
    if not flood:
        return page_times(client, pages=pages)
    child = subprocess.Popen([sys.executable, "-c", FLOOD, url, str(flood)])
    try:
        time.sleep(3)  # the flood under way
        return page_times(client, pages=pages)
    finally:
        child.kill()
        child.wait()


def measured(store: object, *, flood: int, pages: int) -> list[float]:
    """The page's times in a fresh workstation (a fresh throttle) over `store`."""
    with serve(store) as served, httpx.Client(base_url=served.url, timeout=120) as client:  # type: ignore[arg-type]
        sign_in(client, "ann")
        return one_round(served.url, client, flood=flood, pages=pages)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=15)
    parser.add_argument("--clients", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = open_review_store(StorageSettings(database_url=f"sqlite:///{folder}/f.db"))
        with store.unit_of_work() as uow:
            add_reviewer(uow, name="ann", role="reviewer", password=PASSWORD)
        rounds = {
            "no flood": measured(store, flood=0, pages=args.pages),
            "flood, defaults": measured(store, flood=args.clients, pages=args.pages),
        }
        # The throttle lifted: what the bound on verifications holds alone.
        defaults = SignInThrottle.__init__.__kwdefaults__
        defaults.update(per_address=10**9, per_name=10**9)
        rounds["flood, throttle lifted"] = measured(store, flood=args.clients, pages=args.pages)
        store.dispose()
    base = statistics.median(rounds["no flood"])
    for name, times in rounds.items():
        median = statistics.median(times)
        print(f"{name}: median {median * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms, "
              f"ratio {median / base:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
