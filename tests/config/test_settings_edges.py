"""Issue 20 §3: no setting silently ignored. Unknown TOML keys and sections stop the run
(exit 2, one line naming the closest valid key); an unknown MEDASR_* variable gets one
warning line; a bad TOML value is named by its TOML key; an in-memory database is refused.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from config.errors import ConfigError
from config.settings import load_settings


def toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "t.toml"
    path.write_text(text)
    monkeypatch.setenv("MEDASR_CONFIG", str(path))
    return path


def test_a_misspelt_toml_key_is_a_configuration_error_naming_the_closest_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reviewer's file: encryption looks on, is off, and patient audio goes out clear.
    toml(tmp_path, monkeypatch, '[encryption]\nenabeld = true\njwe_key = "SENTKEY-16chars!"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "\n" not in message
    assert "[encryption] enabeld" in message
    assert "did you mean 'enabled'" in message
    assert "SENTKEY" not in message


def test_an_unknown_toml_section_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml(tmp_path, monkeypatch, "[encrypton]\nenabled = true\n")
    with pytest.raises(ConfigError, match=r"unknown section \[encrypton\].*'encryption'"):
        load_settings()


def test_a_top_level_toml_key_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml(tmp_path, monkeypatch, "concurrency = 3\n")
    with pytest.raises(ConfigError, match=r"'concurrency'.*\[pipeline\]"):
        load_settings()


def test_a_bad_toml_value_is_named_by_its_toml_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = toml(tmp_path, monkeypatch, "[pipeline]\nconcurrency = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith(f"[pipeline] concurrency in {path}:"), message
    assert "MEDASR_CONCURRENCY" not in message


def test_the_environment_overriding_a_toml_value_is_named_as_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toml(tmp_path, monkeypatch, "[pipeline]\nconcurrency = 4\n")
    monkeypatch.setenv("MEDASR_CONCURRENCY", "0")
    with pytest.raises(ConfigError, match=r"^MEDASR_CONCURRENCY:"):
        load_settings()


def test_an_unknown_medasr_variable_gets_one_warning_naming_the_closest(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEDASR_ENCRPYT", "true")
    load_settings()
    load_settings()  # once per process, not once per load
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "medasr: warning: unknown variable MEDASR_ENCRPYT is ignored (did you mean MEDASR_ENCRYPT?)"
    ]


@pytest.mark.parametrize(
    "name",
    [
        "MEDASR_HOME",
        "MEDASR_CONFIG",
        "MEDASR_DEVSERVER_PORT",
        "MEDASR_DEVSERVER_RATE_429",
        "MEDASR_TEST_POSTGRES_URL",
        "MEDASR_PIPELINE__SETTLE_S",
        "MEDASR_QUALITY__REPEAT_MIN_WORDS",
        "MEDASR_CONCURRENCY",
    ],
)
def test_known_variables_get_no_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    value = {"MEDASR_QUALITY__REPEAT_MIN_WORDS": "8"}.get(name, "1")
    if name == "MEDASR_CONFIG":
        value = ""
    monkeypatch.setenv(name, value)
    load_settings()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite:///file:x?mode=memory&uri=true",
        "sqlite:///file::memory:?uri=true",
        "sqlite:///file::memory:?cache=shared&uri=true",
        "sqlite+pysqlite:///file:memdb1?uri=true&MODE=memory",
        "sqlite:///file:?uri=true",  # an empty URI filename: a temporary database
        "sqlite:///%3Amemory%3A",
    ],
)
def test_an_in_memory_database_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.setenv("MEDASR_DATABASE_URL", url)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith("MEDASR_DATABASE_URL:"), message
    assert "in-memory" in message
    assert "\n" not in message
