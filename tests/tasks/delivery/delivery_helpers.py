"""Helpers of the delivery suites: a store with done transcripts, settings for a devserver."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from pydantic import SecretStr

from config.settings import DeliverySettings, PipelineSettings, Settings, StorageSettings
from devserver import RunningDevServer
from storage.interface import UnitOfWorkFactory
from storage.records import DeliveryRecord, ItemRecord
from storage.sources import SourceFile
from tasks.delivery.deliverer import DeliveryStats, deliver_pending
from tests.servers import client_settings

LANG = "en-IN"


def content_sha(uri: str, version: str = "v1") -> str:
    return hashlib.sha256(f"{uri}@{version}".encode()).hexdigest()


def make_done(
    store: UnitOfWorkFactory,
    texts: dict[str, str],
    *,
    version: str = "v1",
    language: str = LANG,
    metadata: dict[str, dict[str, str]] | None = None,
    same_audio: bool = False,
) -> dict[str, ItemRecord]:
    """Register `texts`' sources (at `version`) and finish each with its text;
    `same_audio`: every source is a copy of one recording (one content sha256)."""
    with store.unit_of_work() as uow:
        uow.items.register_items([SourceFile(u, 10, version) for u in texts], language=language)
    with store.unit_of_work() as uow:
        claimed = uow.claims.claim_batch(
            owner="w", language=language, limit=len(texts), lease_s=60, uris=list(texts)
        )
    with store.unit_of_work() as uow:
        for item in claimed:
            uri = item.source_uri
            uow.claims.set_fingerprint(
                item.id,
                sha256=content_sha("copy" if same_audio else uri, version),
                size_bytes=10,
                lease_token=item.lease_token,
            )
            uow.claims.finish_item(
                item.id,
                lease_token=item.lease_token,
                text=texts[uri],
                duration_ms=1000,
                chunk_count=1,
                extras={},
            )
        if metadata:
            uow.items.set_item_metadata(metadata, language=language)
    with store.unit_of_work(read_only=True) as uow:
        return uow.item_queries.find_items(source_uris=list(texts), language=language)


def delivery_settings(
    server: RunningDevServer, store_url: str, *, docs_query: str = "", **overrides: Any
) -> Settings:
    service, encryption = client_settings(server, **overrides)
    return Settings(
        service=service,
        encryption=encryption,
        storage=StorageSettings(database_url=store_url),
        pipeline=PipelineSettings(concurrency=4),
        delivery=DeliverySettings(docs_query=docs_query),
    )


def deliver(
    settings: Settings,
    store: UnitOfWorkFactory,
    *,
    format_name: str = "txt",
    language: str | None = None,
    allow_unlinked: bool = True,
) -> DeliveryStats:
    """These suites test the queue; the patient link has its own (test_deliver_patient_link)."""
    return asyncio.run(
        deliver_pending(
            settings=settings,
            store=store,
            language=language,
            format_name=format_name,
            allow_unlinked=allow_unlinked,
        )
    )


def rows_of(store: UnitOfWorkFactory, item: ItemRecord) -> list[DeliveryRecord]:
    with store.unit_of_work(read_only=True) as uow:
        return uow.deliveries.deliveries_of_item(item.id)


def docs_entries(server: RunningDevServer) -> list[Any]:
    return [e for e in server.ledger.entries() if e.path == "/mr/api/v2/docs"]


def sha_of_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def target_settings(
    server: RunningDevServer, store_url: str, *, target: str, **delivery: Any
) -> Settings:
    settings = delivery_settings(server, store_url)
    fields = {
        "target": target,
        "hl7_ack_timeout_s": 1.0,  # generous: a loaded machine must not turn an AA into a resend
        "fhir_token": SecretStr(server.token),
        **delivery,
    }
    return settings.model_copy(update={"delivery": DeliverySettings(**fields)})
