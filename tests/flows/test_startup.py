"""`medasr run`'s start-up: one run context, Prefect's API started early, clear failures.

The subprocess cases run the real console script (as a cron job would); the in-process
case counts how often a run loads settings and opens the store.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import soundfile
from typer.testing import CliRunner

from config.settings import Settings
from devserver import RunningDevServer, start_devserver
from devserver.tone import encode_tone_dictation
from flows.cli import app
from flows.setup import bootstrap
from storage import manifest, sources
from storage.database import Store
from tests.flows.prefect_server import MEDASR, clean_env, free_port
from tests.helpers.flows import Corpus
from tests.helpers.processes import processes_with

TOKEN = "startup-test-token"


@pytest.fixture
def one_recording(tmp_path: Path) -> Path:
    root = tmp_path / "recordings"
    root.mkdir()
    soundfile.write(
        root / "note.wav", encode_tone_dictation("review in 6 weeks."), 16000, subtype="PCM_16"
    )
    return root


@pytest.fixture
def service() -> RunningDevServer:
    with start_devserver(token=TOKEN, port=0, engine="tone") as server:
        yield server


def medasr_env(tmp_path: Path, server: RunningDevServer, **extra: str) -> dict[str, str]:
    return clean_env(
        tmp_path / "prefect",
        MEDASR_BASE_URL=server.url,
        MEDASR_TOKEN=TOKEN,
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
        MEDASR_PIPELINE__SETTLE_S="0",
        **extra,
    )


def test_an_unreachable_prefect_api_url_is_one_sentence_and_exit_2(
    tmp_path: Path, service: RunningDevServer, one_recording: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}/api"
    env = medasr_env(tmp_path, service, PREFECT_API_URL=url)

    done = subprocess.run(
        [MEDASR, "run", str(one_recording), "--language", "en-IN", "--quiet"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("medasr: configuration error: no Prefect server answers")
    assert f"PREFECT_API_URL={url}" in lines[0]
    assert "prefect server start" in lines[0]
    assert len(service.ledger.entries()) == 0  # nothing was sent


def test_a_run_with_the_temporary_server_leaves_no_server_behind(
    tmp_path: Path, service: RunningDevServer, one_recording: Path
) -> None:
    env = medasr_env(tmp_path, service)

    done = subprocess.run(
        [MEDASR, "run", str(one_recording), "--language", "en-IN", "--quiet"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert [e.status for e in service.ledger.entries()] == [200]
    assert (Path(env["PREFECT_HOME"]) / "prefect.db").exists()  # the flow ran on Prefect
    assert processes_with(Path(env["PREFECT_HOME"])) == []


def test_a_cli_run_loads_settings_once_and_opens_the_store_once(
    pinned: Settings, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded, opened = [], []
    load_settings, open_store = bootstrap.load_settings, Store.open

    def counted_load(**overrides: object) -> Settings:
        loaded.append(overrides)
        return load_settings(**overrides)  # type: ignore[arg-type]

    def counted_open(storage: object, **kwargs: object) -> Store:
        opened.append(storage)
        return open_store(storage, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bootstrap, "load_settings", counted_load)
    monkeypatch.setattr(Store, "open", staticmethod(counted_open))

    result = CliRunner().invoke(app, ["run", str(corpus.root), "--language", "en-IN"])

    assert result.exit_code == 1, result.output  # the corpus holds two bad files
    assert len(opened) == 1  # was 2: the CLI's check, then the flow (3 for a rerun)
    assert len(loaded) == 1


def test_a_cli_run_parses_its_source_once_and_reads_its_manifest_once(
    pinned: Settings, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    (corpus.root / "medasr.csv").write_text("path,doc_type\nadmission.wav,admission\n")
    source = str(corpus.root)
    parsed: list[str] = []
    read: list[Path] = []
    parse, read_text = sources._parse_location, manifest._read_text

    def counted_parse(text: str) -> sources.SourceLocation:
        if text == source:
            parsed.append(text)
        return parse(text)

    def counted_read(path: Path) -> str:
        read.append(path)
        return read_text(path)

    monkeypatch.setattr(sources, "_parse_location", counted_parse)
    monkeypatch.setattr(manifest, "_read_text", counted_read)

    result = CliRunner().invoke(app, ["run", source, "--language", "en-IN"])

    assert result.exit_code == 1, result.output  # the corpus holds two bad files
    assert len(parsed) == 1  # was 7: the CLI's checks, the run context twice, discovery...
    assert read == [corpus.root / "medasr.csv"]  # was read twice: the CLI's check, discovery
