"""Debian's chromium driven by Playwright (never a browser download): the launch rules.

Where /usr/bin/chromium is missing the browser tests skip with one line saying why;
under CI=true they fail instead, since .ci/run installs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launched_browser() -> Iterator[object]:
    """A headless chromium for the module's tests; skips (or fails under CI) without one."""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing (apt-get install -y chromium): browser tests not run"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
