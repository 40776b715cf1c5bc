"""Issue 20 at the command line: a misspelt setting, an in-memory database and a missing
recording each stop a command with one line and exit 2 before anything is sent."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.flows.prefect_server import MEDASR, clean_env


def medasr(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEDASR, *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(
        tmp_path / "prefect",
        MEDASR_BASE_URL="http://127.0.0.1:9",
        MEDASR_TOKEN="t",
        MEDASR_DATABASE_URL=f"sqlite:///{tmp_path / 'medasr.db'}",
    )


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "s"
    folder.mkdir()
    return folder


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return lines[0]


def test_a_misspelt_toml_key_stops_the_run(
    env: dict[str, str], source: Path, tmp_path: Path
) -> None:
    config = tmp_path / "t.toml"
    config.write_text('[encryption]\nenabeld = true\njwe_key = "SENTKEY-16chars!"\n')
    result = medasr(
        "run", str(source), "-l", "en-IN", env=env | {"MEDASR_CONFIG": str(config)}, cwd=tmp_path
    )
    line = one_line(result)
    assert line.startswith("medasr: configuration error:")
    assert "[encryption] enabeld" in line
    assert "'enabled'" in line
    assert "SENTKEY" not in result.stdout + result.stderr


@pytest.mark.parametrize("url", ["sqlite:///", "sqlite:///file::memory:?uri=true"])
def test_an_in_memory_database_is_refused(
    env: dict[str, str], source: Path, tmp_path: Path, url: str
) -> None:
    result = medasr(
        "run",
        str(source),
        "-l",
        "en-IN",
        env=env | {"MEDASR_DATABASE_URL": url},
        cwd=tmp_path,
    )
    assert result.returncode == 2
    line = one_line(result)
    assert "MEDASR_DATABASE_URL" in line
    assert "in-memory" in line
    assert not (Path(env["PREFECT_HOME"]) / "prefect.db").exists()  # stopped before Prefect


def test_split_of_a_missing_file_is_a_usage_error(env: dict[str, str], tmp_path: Path) -> None:
    result = medasr(
        "split", str(tmp_path / "nope.wav"), "--out", str(tmp_path / "out"), env=env, cwd=tmp_path
    )
    line = one_line(result)
    assert line.startswith("medasr: usage error:")
    assert "nope.wav" in line


def test_an_unknown_variable_is_named_with_the_closest_one(
    env: dict[str, str], tmp_path: Path
) -> None:
    result = medasr("status", env=env | {"MEDASR_ENCRPYT": "true"}, cwd=tmp_path)
    warnings = [line for line in result.stderr.splitlines() if "MEDASR_ENCRPYT" in line]
    assert warnings == [
        "medasr: warning: unknown variable MEDASR_ENCRPYT is ignored (did you mean MEDASR_ENCRYPT?)"
    ]


SETPRIV = shutil.which("setpriv")
# root without the capabilities that let it read and write past file modes, as the issue ran it
WITHOUT_ROOT_POWERS = [str(SETPRIV), "--bounding-set=-dac_override,-dac_read_search"]
needs_setpriv = pytest.mark.skipif(SETPRIV is None, reason="setpriv (util-linux) is not installed")


@needs_setpriv
def test_a_data_dir_that_cannot_be_written_stops_the_run_before_prefect(
    env: dict[str, str], source: Path, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o500)
    data_dir.chmod(0o500)
    result = subprocess.run(
        [*WITHOUT_ROOT_POWERS, MEDASR, "run", str(source), "-l", "en-IN"],
        env=env | {"MEDASR_DATA_DIR": str(data_dir)},
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    line = one_line(result)
    assert line.startswith("medasr: configuration error: MEDASR_DATA_DIR:"), line
    assert not (Path(env["PREFECT_HOME"]) / "prefect.db").exists()  # stopped before Prefect
