"""`medasr run` over a fresh tone corpus against a canned peer (tests/reliability/canned_peer.py)
standing in for the service: what a misbehaving service test needs, set up once.

`run_against_peer(answer, seed=..., files=1, database_url=None, devserver=None, **env)` is
the `run_against_peer` fixture of tests/reliability/conftest.py: the corpus of `files`
recordings in `tmp_path/corpus`, medasr pointed at the peer (MEDASR_BASE_URL) with `env`,
the store migrated first when it is PostgreSQL's, then one `medasr run`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devserver import RunningDevServer
from tests.reliability.canned_peer import canned_peer
from tests.reliability.corpus import age_files, write_tone_corpus
from tests.reliability.harness import RUN_TIMEOUT_S, Finished, Medasr


@dataclass(frozen=True)
class PeerRun:
    """How the run ended, the requests the peer was sent, and the store it wrote."""

    ended: Finished
    requests: int
    database_url: str


def peer_runner(
    tmp_path: Path,
    *,
    tone_devserver: Callable[..., RunningDevServer],
    medasr_for: Callable[..., Medasr],
    prefect_api: dict[str, str],
) -> Callable[..., PeerRun]:
    """The fixture's function, bound to a test's folder and fixtures."""

    def run(
        answer: bytes,
        *,
        seed: int,
        files: int = 1,
        database_url: str | None = None,
        devserver: RunningDevServer | None = None,
        timeout_s: float = RUN_TIMEOUT_S,
        **env: str,
    ) -> PeerRun:
        corpus = tmp_path / "corpus"
        write_tone_corpus(corpus, files, seed=seed)
        age_files(corpus)
        url = database_url or f"sqlite:///{tmp_path / 'medasr.db'}"
        with canned_peer(answer) as peer:
            server = devserver or tone_devserver()
            medasr = medasr_for(server, url, MEDASR_BASE_URL=peer.url, **prefect_api, **env)
            if url.startswith("postgresql"):  # SQLite's store is migrated by the run itself
                assert medasr.run("db", "upgrade").returncode == 0
            ended = medasr.run("run", str(corpus), "--language", "en-IN", timeout_s=timeout_s)
        return PeerRun(ended=ended, requests=len(peer.requests), database_url=url)

    return run
