"""The shared limit's edges: fail closed when Prefect is unreachable, no Prefect call without it."""

from __future__ import annotations

import asyncio

import pytest
from prefect.settings import PREFECT_API_URL, PREFECT_CLIENT_MAX_RETRIES, temporary_settings

from config.settings import Settings, StorageSettings
from flows import drain
from flows.setup.bootstrap import Run, RunRequest
from service.client import TranscriptionClient
from storage import open_store
from tasks.errors import SharedLimitUnavailable
from tasks.throttle.gate import RequestGate
from tasks.throttle.global_limit import SharedLimit, ensure_shared_limits
from tests.flows.prefect_server import free_port
from tests.servers import client_settings, make_wav_bytes


@pytest.fixture
def unreachable_prefect():
    url = f"http://127.0.0.1:{free_port()}/api"
    with temporary_settings({PREFECT_API_URL: url, PREFECT_CLIENT_MAX_RETRIES: 0}):
        yield url


def test_creating_the_limit_without_its_server_is_a_clear_error(unreachable_prefect) -> None:
    with pytest.raises(SharedLimitUnavailable, match="PREFECT_API_URL") as caught:
        asyncio.run(ensure_shared_limits(limit=4, requests_per_s=None))
    assert "'medasr-requests'" in caught.value.message
    assert not caught.value.transient  # a ConfigError: the run stops, items stay pending


def test_no_request_goes_out_without_a_shared_slot(unreachable_prefect, devserver_factory) -> None:
    server = devserver_factory()
    gate = RequestGate(concurrency=4, shared=SharedLimit(requests_per_s=None))

    async def call() -> None:
        async with TranscriptionClient(*client_settings(server)) as client:
            await client.transcribe(
                make_wav_bytes(seconds=0.2), language="en-IN", around_attempt=gate.attempt
            )

    with pytest.raises(SharedLimitUnavailable):
        asyncio.run(call())
    assert len(server.ledger) == 0
    assert gate.window.in_flight == 0  # the window's place was given back


def test_without_the_setting_no_prefect_limit_is_touched(monkeypatch) -> None:
    async def refuse(**_: object) -> SharedLimit:
        raise AssertionError("ensure_shared_limits called without MEDASR_GLOBAL_CONCURRENCY")

    monkeypatch.setattr(drain, "ensure_shared_limits", refuse)
    settings = Settings()
    assert settings.pipeline.global_concurrency is None
    assert asyncio.run(drain._shared(settings)) is None


def test_an_unreachable_server_stops_the_gate_before_any_request(monkeypatch, tmp_path) -> None:
    async def unreachable(**_: object) -> SharedLimit:
        raise SharedLimitUnavailable("the Prefect server did not answer")

    monkeypatch.setattr(drain, "ensure_shared_limits", unreachable)
    settings = Settings(pipeline={"global_concurrency": 3})
    shared = asyncio.run(drain._shared(settings))
    storage = StorageSettings(database_url=f"sqlite:///{tmp_path / 's.db'}", data_dir=tmp_path)
    run = Run(
        request=RunRequest(language=None),
        settings=settings.model_copy(update={"storage": storage}),
        store=open_store(storage),
        source_roots=(),
    )
    ctx = run.batch_context(shared=shared)
    try:
        assert ctx.gate.stopped is shared  # fail closed: every later attempt raises it
    finally:
        ctx.close()
        run.close()
