"""Importing medasr changes nothing in the process: its Prefect defaults are the entry
points' to set (the command's `main`), so a test or a library user importing a module
gets no surprise in os.environ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.runtime import temporary_server_environment

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = ("PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_SERVER_LOGGING_LEVEL")

# Snapshot, import every module of every package, report what changed.
IMPORT_EVERYTHING = """
import importlib, json, os, pkgutil
before = dict(os.environ)
for top in ("audit", "config", "service", "devserver", "storage", "tasks", "flows", "web"):
    package = importlib.import_module(top)
    for module in pkgutil.walk_packages(package.__path__, top + "."):
        # __main__ runs the command line; Alembic's env.py runs a migration on import.
        if module.name.endswith(".__main__") or module.name.startswith("storage.migrations"):
            continue
        importlib.import_module(module.name)
after = dict(os.environ)
changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
print(json.dumps(changed))
"""

RUN_MAIN = """
import os, sys
from flows.cli import main
sys.argv = ["medasr", "--help"]
try:
    main()
except SystemExit:
    pass
print({name: os.environ.get(name) for name in %r})
"""


def _environment_without_defaults() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in DEFAULTS}


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_environment_without_defaults(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_importing_every_module_leaves_the_environment_unchanged() -> None:
    assert json.loads(_python(IMPORT_EVERYTHING)) == []


def test_the_command_sets_the_prefect_defaults() -> None:
    shown = _python(RUN_MAIN % (DEFAULTS,))
    assert shown == repr(dict.fromkeys(DEFAULTS, "false") | {DEFAULTS[1]: "CRITICAL"})


def test_a_temporary_server_gets_the_defaults_an_operator_did_not_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_SERVER_LOGGING_LEVEL", "DEBUG")
    environment = temporary_server_environment({})
    assert environment["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert environment["PREFECT_SERVER_LOGGING_LEVEL"] == "DEBUG"
