"""The devserver's text faults (--p-empty, --p-repeat, --p-wrong-script) over sockets."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from config.errors import ConfigError
from config.quality import QualitySettings
from devserver import DevServerConfig
from devserver.text_faults import TEXT_FAULT_NAMES, TextFaults, spoil_text
from flows.cli import app
from service.contract import LANGUAGES
from tasks.transcription.quality_gate import has_repetition, has_script_mismatch, words_of
from tests.servers import DEVSERVER_TOKEN, make_tone_wav_bytes

AUTH = {"Authorization": f"Bearer {DEVSERVER_TOKEN}"}
SENTENCE = "patient is a 54 year old male. troponin negative."


def post(server, wav: bytes, *, language: str = "en-IN") -> httpx.Response:
    files = {"file": ("chunk-0001.wav", wav, "audio/wav")}
    url = f"{server.url}/voice/get-asr"
    return httpx.post(url, params={"language": language}, headers=AUTH, files=files, timeout=10)


@pytest.mark.parametrize(
    ("option", "fault"),
    [("p_empty", "empty"), ("p_repeat", "repeat"), ("p_wrong_script", "wrong_script")],
    ids=["empty", "repeat", "wrong-script"],
)
def test_a_certain_fault_spoils_every_answer_and_the_ledger_says_so(
    devserver_factory, tmp_path: Path, option: str, fault: str
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    server = devserver_factory(**{option: 1.0}, ledger_path=ledger)

    response = post(server, make_tone_wav_bytes(SENTENCE))

    assert response.status_code == 200
    assert response.json()["text"] == spoil_text(SENTENCE, fault=fault, language="en-IN")
    (line,) = ledger.read_text().splitlines()
    assert (json.loads(line)["text_fault"], json.loads(line)["fault"]) == (fault, None)


def test_without_text_faults_the_answer_is_the_engines(devserver_factory) -> None:
    server = devserver_factory()
    assert post(server, make_tone_wav_bytes(SENTENCE)).json()["text"] == SENTENCE
    assert server.ledger.entries()[0].text_fault is None


def test_text_faults_leave_the_network_fault_draws_alone(devserver_factory) -> None:
    wav = make_tone_wav_bytes("bp stable.")
    plain = devserver_factory(rate_503=0.5, seed=4)
    spoiled = devserver_factory(rate_503=0.5, p_empty=0.5, seed=4)

    plain_statuses = [post(plain, wav).status_code for _ in range(16)]
    spoiled_statuses = [post(spoiled, wav).status_code for _ in range(16)]

    assert plain_statuses == spoiled_statuses
    assert set(plain_statuses) == {200, 503}


def test_draws_are_deterministic_per_seed_and_follow_the_rates() -> None:
    def draws(seed: int) -> list[str | None]:
        faults = TextFaults(p_empty=0.2, p_repeat=0.3, p_wrong_script=0.1, seed=seed)
        return [faults.draw() for _ in range(2000)]

    first = draws(5)
    assert first == draws(5)
    assert first != draws(6)
    shares = {name: first.count(name) / len(first) for name in TEXT_FAULT_NAMES}
    assert shares == pytest.approx({"empty": 0.2, "repeat": 0.3, "wrong_script": 0.1}, abs=0.04)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"p_empty": 1.5}, "--p-empty must be between 0 and 1"),
        ({"p_repeat": -0.1}, "--p-repeat must be between 0 and 1"),
        ({"p_wrong_script": 2.0}, "--p-wrong-script must be between 0 and 1"),
        ({"p_empty": 0.6, "p_repeat": 0.6}, "add up to more than 1"),
    ],
    ids=["empty-over-1", "repeat-negative", "wrong-script-over-1", "sum-over-1"],
)
def test_rates_out_of_range_are_refused(options: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        DevServerConfig(**options)


def test_the_command_line_has_the_three_options() -> None:
    result = CliRunner().invoke(app, ["devserver", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for option in ("--p-empty", "--p-repeat", "--p-wrong-script"):
        assert option in result.stdout


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_the_wrong_script_answer_is_wrong_for_every_language(language: str) -> None:
    for text in (SENTENCE, "120/80", ""):
        spoiled = spoil_text(text, fault="wrong_script", language=language)
        assert has_script_mismatch(spoiled, language=language), (text, spoiled)


@pytest.mark.parametrize("text", [SENTENCE, "bp", "", "a b c d e f"], ids=repr)
def test_the_repeat_answer_is_a_loop_the_gate_sees(text: str) -> None:
    settings = QualitySettings()
    words = words_of(spoil_text(text, fault="repeat", language="en-IN"))
    assert has_repetition(
        words, min_copies=settings.repeat_min_copies, min_words=settings.repeat_min_words
    )
    assert words[: len(words_of(text))] == words_of(text)  # the real text is still there
