"""Flows run in this process against a devserver: their settings, their corpus, their summary."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from config.settings import Settings, load_settings
from devserver import RunningDevServer
from flows.reporting.states import summary_from
from flows.reporting.summary import RunSummary

TOKEN = "flow-test-token"
# Small cap so a 40 s dictation needs several chunks and tests stay fast.
MAX_UPLOAD_BYTES = 400_000


@dataclass(frozen=True)
class Corpus:
    root: Path
    texts: dict[str, str]  # relative path -> expected transcript
    bad: dict[str, str]  # relative path -> expected status


def settings_for(server: RunningDevServer, db_path: Path, *, token: str = TOKEN) -> Settings:
    base = load_settings()
    return base.model_copy(
        update={
            "service": base.service.model_copy(
                update={
                    "base_url": server.url,
                    "token": SecretStr(token),
                    "max_upload_bytes": MAX_UPLOAD_BYTES,
                    "retry_initial_backoff_s": 0.01,
                    "retry_max_backoff_s": 0.05,
                    "max_attempts": 2,
                }
            ),
            "storage": base.storage.model_copy(update={"database_url": f"sqlite:///{db_path}"}),
            "pipeline": base.pipeline.model_copy(update={"settle_s": 0.0, "batch_size": 3}),
        }
    )


def run_flow(flow: Any, **parameters: Any) -> RunSummary:
    """A flow called in this process: the RunSummary its final state carries."""

    async def run() -> RunSummary:
        return await summary_from(await flow(**parameters, return_state=True))

    return asyncio.run(run())
