"""Reading Prefect's bundled profile without importing Prefect agrees with Prefect."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.runtime import bundled_profile_settings, temporary_server_allowed
from tests.helpers.fresh import json_printed_by

PREFECTS_OWN_READING = """
import json
from prefect.settings import get_current_settings
settings = get_current_settings()
print(json.dumps({"url": settings.api.url, "enabled": settings.server.ephemeral.enabled}))
"""


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No PREFECT_* variable, an empty PREFECT_HOME, a working directory without files."""
    for name in [n for n in os.environ if n.startswith("PREFECT_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def prefects_reading(work: Path) -> dict[str, object]:
    """What Prefect itself makes of the same environment and working directory."""
    reading: dict[str, object] = json_printed_by(PREFECTS_OWN_READING, cwd=work)
    return reading


def test_the_bundled_profile_allows_a_temporary_server_as_prefect_says(bare: Path) -> None:
    profile = bundled_profile_settings()
    assert profile is not None
    assert temporary_server_allowed(profile) is True
    assert prefects_reading(bare) == {"url": None, "enabled": True}


@pytest.mark.parametrize(("value", "enabled"), [("false", False), ("0", False), ("on", True)])
def test_the_environment_wins_over_the_profile_as_in_prefect(
    bare: Path, monkeypatch: pytest.MonkeyPatch, value: str, enabled: bool
) -> None:
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_ENABLED", value)
    profile = bundled_profile_settings()
    assert profile is not None
    assert "PREFECT_SERVER_EPHEMERAL_ENABLED" not in profile  # the server gets the env's
    assert temporary_server_allowed(profile) is enabled
    assert prefects_reading(bare)["enabled"] is enabled


def test_a_value_it_cannot_read_leaves_the_answer_to_prefect(
    bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_ENABLED", "perhaps")
    profile = bundled_profile_settings()
    assert profile is not None
    assert temporary_server_allowed(profile) is None


def test_a_profile_chosen_by_name_is_left_to_prefect(
    bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PREFECT_PROFILE", "local")  # bundled: PREFECT_API_URL = 127.0.0.1:4200
    assert bundled_profile_settings() is None


def test_settings_beyond_the_environment_are_left_to_prefect(bare: Path, tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "profiles.toml").write_text('active = "default"\n')
    assert bundled_profile_settings() is None
    (tmp_path / "home" / "profiles.toml").unlink()
    (bare / "prefect.toml").write_text("")
    assert bundled_profile_settings() is None
