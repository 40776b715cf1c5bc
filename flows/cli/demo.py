"""`medasr demo`: the whole job on embedded defaults, twice, to show nothing is sent twice.

Devserver on loopback, SQLite and the data folder under .demo/, samples/, and Prefect's
temporary server started the way `medasr run` starts it (flows/prefect_runtime/): a busy
host is waited for, and a server that never comes up is one line and exit 75. A later
demo keeps .demo/ and shows the resumed run (nothing sent again); `--fresh` starts over.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr
from rich.console import Console

from config.errors import ConfigError
from config.settings import Settings, load_settings, pinned_settings
from devserver import DevServerConfig, RunningDevServer, start_devserver
from flows.backlog import transcribe_backlog
from flows.cli.console import print_summary
from flows.cli.demo_workdir import prepare_workdir
from flows.cli.error_exits import usage_error
from flows.cli.flow_run import started_prefect_api, wait_for_prefect
from flows.cli.store import print_status
from flows.reporting.states import summary_from
from flows.reporting.summary import RunSummary
from flows.setup.bootstrap import backlog_request, prepare_source, settings_for
from storage import open_store
from storage.errors import SourceError
from storage.records import ItemStatus
from tasks.discovery.recording_names import reason_about, recording_name

DEMO_TOKEN = "demo-token"  # noqa: S105 - throwaway token of the loopback devserver


def demo_command(
    samples: Annotated[Path, typer.Option(help="Folder of recordings.")] = Path("samples"),
    workdir: Annotated[Path, typer.Option(help="Where the demo database lives.")] = Path(".demo"),
    language: Annotated[
        str, typer.Option("--language", "-l", help="Language code of the recordings.")
    ] = "en-IN",
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Forget the last demo's database and start over.")
    ] = False,
) -> None:
    """Transcribe samples/ against a local devserver, then run again to show zero requests."""
    _check_options(samples, language)
    console = Console()
    resumed = prepare_workdir(workdir, fresh=fresh)
    base = load_settings()
    # Started first: it boots while the devserver starts (flows/prefect_runtime/).
    api = started_prefect_api(base.pipeline)
    try:
        with start_devserver(DevServerConfig(token=DEMO_TOKEN, port=0)) as server:
            settings = _demo_settings(base, server_url=server.url, workdir=workdir)
            wait_for_prefect(api)
            with pinned_settings(settings), api.in_use():
                sent = _first_and_second(
                    console, settings, server, samples=samples, language=language,
                    resumed=resumed, workdir=workdir,
                )  # fmt: skip
    finally:
        api.stop()
    console.print(f"requests the devserver saw: first run {sent[0]}, second run {sent[1]}")
    if resumed:
        console.print("(the demo resumed its earlier store; `medasr demo --fresh` starts over)")


def _check_options(samples: Path, language: str) -> None:
    """The language and the samples folder, before anything starts; else exit 2."""
    request = backlog_request(source=str(samples), language=language)
    try:
        settings_for(request)  # an unsupported language
        prepare_source(request)  # a samples folder that is not there
    except ConfigError as exc:
        usage_error("configuration error", exc)
    except SourceError as exc:
        usage_error("usage error", f"--samples: {exc}")


def _demo_settings(base: Settings, *, server_url: str, workdir: Path) -> Settings:
    return base.model_copy(
        update={
            "service": base.service.model_copy(
                update={"base_url": server_url, "token": SecretStr(DEMO_TOKEN)}
            ),
            "storage": base.storage.model_copy(
                update={
                    "database_url": f"sqlite:///{(workdir / 'medasr.db').resolve()}",
                    "data_dir": (workdir / "data").resolve(),  # nothing left in the checkout
                }
            ),
            "pipeline": base.pipeline.model_copy(update={"settle_s": 0.0}),
        }
    )


def _first_and_second(
    console: Console,
    settings: Settings,
    server: RunningDevServer,
    *,
    samples: Path,
    language: str,
    resumed: bool,
    workdir: Path,
) -> tuple[int, int]:
    """Both runs, their summaries and transcripts; the requests each sent."""
    if resumed:
        console.rule(f"first run: the store of the last demo ({workdir}) is kept")
    else:
        console.rule("first run: everything is new")
    first = _run(samples, language)
    print_summary(first, title="first run", store=settings.storage.store_location)
    _print_transcripts(settings.storage, console, samples=samples)
    print_status(settings.storage)
    sent_before = len(server.ledger.entries())
    console.rule("second run: nothing changed")
    second = _run(samples, language)
    print_summary(second, title="second run", store=settings.storage.store_location)
    return sent_before, len(server.ledger.entries()) - sent_before


def _run(samples: Path, language: str) -> RunSummary:
    async def run() -> RunSummary:
        state = await transcribe_backlog(source=str(samples), language=language, return_state=True)
        return await summary_from(state)

    return asyncio.run(run())


def _print_transcripts(storage: Any, console: Console, *, samples: Path) -> None:
    store = open_store(storage)
    roots = (str(samples.resolve()),)
    try:
        with store.unit_of_work() as uow:
            for row in uow.item_queries.export_rows():
                name = recording_name(row.source, roots=roots)
                if row.status == ItemStatus.DONE:
                    text = row.text or ""
                    shown = text if len(text) <= 240 else f"{text[:240]}... ({len(text)} chars)"
                    console.print(f"[bold]{name}[/bold]: {shown}")
                else:
                    detail = ", ".join(row.flags) or reason_about(  # flags: needs_review
                        row.error_message, uri=row.source, roots=roots
                    )
                    console.print(f"[bold]{name}[/bold]: {row.status} ({detail})")
    finally:
        store.dispose()
