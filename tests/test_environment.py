"""Every test starts clean: no MEDASR_* from the developer's shell, no .env in reach."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import TEST_SWITCHES


def test_no_medasr_variable_reaches_a_test() -> None:
    leaked = [n for n in os.environ if n.startswith("MEDASR_") and not n.startswith(TEST_SWITCHES)]
    assert leaked == []


def test_the_working_directory_is_the_tests_own(tmp_path: Path) -> None:
    assert Path.cwd() == tmp_path
    assert not (Path.cwd() / ".env").exists()
