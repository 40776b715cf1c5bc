"""Without Debian's chromium the browser tests skip with one line, and fail under CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.web import browser


def test_without_chromium_the_browser_tests_skip_saying_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"chromium is missing \(apt-get install"):
        next(browser.launched_browser())


def test_under_ci_a_missing_chromium_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="chromium is missing"):
        next(browser.launched_browser())
