"""The import rules of DESIGN.md §1, read from the source with `ast` (nothing is imported).

    flows -> tasks -> {service, storage, config}
    devserver (the local stand-in of the service) -> {service, config}; only flows/cli/ starts it
    audit (the trail's writer) -> {storage, config}; tasks/ and flows/ may use it
    flows/cli/ (the command line) sits on top: nothing else imports it
    flows/ holds the flows at its top and three rooms: setup/ (imports no other part of
    flows/), reporting/ and prefect_runtime/ (each imports setup/ and the drain's plain
    batch loops, never the other room)
    what runs before Prefect is imported (the head start, held logs, the Run) imports no prefect
    of tasks/, only steps.py makes Prefect tasks (and the shared limit is Prefect's client)
    tasks/audio/ (the audio engine) is plain: no Prefect, no store, no pipeline steps
    only tasks/ and flows/ import prefect; only storage/ imports sqlalchemy and alembic
    only flows/cli/ is the face (typer, rich); only flows/cli/vendored_click.py names
    Typer's private copy of click (typer._click); nothing but config/ reads os.environ

A failure lists every offending line as "path:line imports X: the rule".
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "config", "service", "devserver", "storage", "tasks", "flows", "web")

# Which of medasr's packages each package may import (itself included).
MAY_IMPORT = {
    "config": {"config"},
    "service": {"config", "service"},
    # The stand-in speaks the service's contract (service/contract.py, jwe.py, errors.py);
    # the product's client never imports the stand-in.
    "devserver": {"config", "service", "devserver"},
    "storage": {"config", "storage"},
    "audit": {"audit", "config", "storage"},
    "tasks": {"audit", "config", "service", "storage", "tasks"},
    "flows": {"audit", "config", "service", "devserver", "storage", "tasks", "flows"},
    # The review workstation: a face over the store like the command line, reaching it
    # only through the unit of work (never SQLAlchemy, never the flows).
    "web": {"audit", "config", "storage", "tasks", "web"},
}
# Libraries confined to some modules (prefixes of dotted module names).
CONFINED = {
    # `medasr devserver` and `medasr demo` start the stand-in; the pipeline never does.
    "devserver": ("devserver", "flows.cli"),
    "prefect": ("tasks", "flows"),
    "sqlalchemy": ("storage",),
    "alembic": ("storage",),
    # `medasr serve` declares its options beside the deployments it builds and serves.
    "typer": ("flows.cli", "flows.deploy", "web.command"),
    # Typer's private copy of click, which types its command API: named in one module.
    "typer._click": ("flows.cli.vendored_click",),
    "rich": ("flows.cli",),
}
# What the audio engine may use of medasr: itself, its errors, and the chunk file name
# the service expects (service/contract.py).
AUDIO_ENGINE_MAY_IMPORT = ("tasks.audio", "tasks.errors", "service.contract", "config")
# tasks/ is wings; each wing may use the shared ones listed, never a sibling's insides
# (delivery does not reach into transcription, nor the other way round).
TASK_WINGS = {
    "tasks.audio": set(),  # checked more strictly by _audio_engine_is_plain
    "tasks.libav": set(),  # the decoding worker: PyAV and the standard library
    "tasks.work": set(),
    "tasks.throttle": {"tasks.errors"},
    "tasks.discovery": set(),
    # A decision's audit event names the recording as a person reads it.
    "tasks.review": {"tasks.discovery"},
    "tasks.retention": {"tasks.errors"},
    "tasks.delivery": {"tasks.work", "tasks.throttle", "tasks.discovery", "tasks.errors"},
    "tasks.transcription": {
        "tasks.audio",
        "tasks.work",
        "tasks.throttle",
        "tasks.discovery",
        "tasks.errors",
    },
}
# The only modules at the top of tasks/: shared by every wing.
TASK_SHARED = ("tasks.errors", "tasks.steps")
# flows/ is the flows at its top (backlog, rerun, purge and their parts) and rooms under
# it; a room may use only the parts of flows/ listed (itself included). The face
# (flows/cli/) sits on top of them all.
FLOW_ROOMS = {
    "flows.setup": set(),
    "flows.reporting": {"flows.setup", "flows.batch_loops"},
    "flows.prefect_runtime": {"flows.setup", "flows.batch_loops"},
}
FLOW_FACE = "flows.cli"
# Modules a command uses before Prefect is imported (a Run is built, the head start
# sends requests, their log records are held): no prefect import, not even a lazy one.
BEFORE_PREFECT = (
    "flows.setup",
    "flows.batch_loops",
    "flows.reporting.summary",
    "flows.reporting.attention",
    "flows.prefect_runtime.head_start",
    "flows.prefect_runtime.held_logs",
    "flows.prefect_runtime.loggers",
    "flows.prefect_runtime.quiet_errors",
    "tasks.work.heap",
)
# The Prefect tasks are defined in one place, tasks/steps.py, over the wings' plain
# functions; the shared limit (tasks/throttle/global_limit.py) is Prefect's concurrency
# limits through its client, no task.
PREFECT_IN_TASKS = ("tasks.steps", "tasks.throttle.global_limit")
ENVIRON_READERS = ("config",)
# The one other place the environment is read: Typer's envvar= gives each devserver flag
# its MEDASR_DEVSERVER_<NAME> variable (a documented contract); the devserver's options
# are not medasr Settings.
ENVVAR_OPTIONS = ("flows.cli.devserver",)
_ENVIRONMENT = {"os.environ", "envvar="}


@dataclass(frozen=True)
class Use:
    """One import (or os.environ read) in one module."""

    module: str  # the importing module, dotted
    path: str  # relative to the repository
    line: int
    target: str  # what it imports, dotted; "os.environ" for an environment read

    def __str__(self) -> str:
        verb = "reads the environment through" if self.target in _ENVIRONMENT else "imports"
        return f"{self.path}:{self.line} {verb} {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, *, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing package
                package = module.split(".")
                package = package if is_package else package[:-1]
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if base == "os" and any(a.name in {"environ", "getenv"} for a in node.names):
                yield node.lineno, "os.environ"
            if base == "storage.database":  # the concrete store is a name inside it
                for alias in node.names:
                    if alias.name == "Store":
                        yield node.lineno, "storage.database.Store"
            for alias in node.names:  # a private part of a library is named with it
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield node.lineno, f"{base}.{alias.name}"
            yield node.lineno, base
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in {"environ", "getenv", "putenv"}:
                yield node.lineno, "os.environ"
        elif isinstance(node, ast.keyword) and node.arg == "envvar":
            yield node.lineno, "envvar="


def all_uses() -> list[Use]:
    uses = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            module = _module_name(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            is_package = path.name == "__init__.py"
            for line, target in _imports(tree, module=module, is_package=is_package):
                uses.append(Use(module, str(path.relative_to(ROOT)), line, target))
    return uses


def _within(name: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(name == prefix or name.startswith(f"{prefix}.") for prefix in prefixes)


def _broken(rule, uses: list[Use]) -> list[str]:
    return [f"{use}: {message}" for use in uses if (message := rule(use))]


def _layers(use: Use) -> str | None:
    wing, target = use.module.split(".")[0], use.target.split(".")[0]
    if target in {"tests", "bench"}:
        return "medasr's packages never import tests or benchmarks"
    if target in MAY_IMPORT and target not in MAY_IMPORT[wing]:
        allowed = ", ".join(sorted(MAY_IMPORT[wing]))
        return f"{wing}/ may import only {allowed} (flows -> tasks -> service, storage, config)"
    return None


def _command_line_on_top(use: Use) -> str | None:
    if _within(use.target, {"flows.cli"}) and not _within(use.module, {"flows.cli"}):
        return "only flows/cli/ imports flows/cli/: the command line sits on top of the flows"
    return None


def _audio_engine_is_plain(use: Use) -> str | None:
    if not _within(use.module, {"tasks.audio"}):
        return None
    top = use.target.split(".")[0]
    if top == "prefect":
        return "the audio engine (tasks/audio/) is plain functions: no Prefect"
    if top in PACKAGES and not _within(use.target, AUDIO_ENGINE_MAY_IMPORT):
        return "the audio engine (tasks/audio/) uses only itself, tasks.errors, service.contract"
    return None


def _task_wings(use: Use) -> str | None:
    if not _within(use.module, {"tasks"}) or use.module in {"tasks", *TASK_SHARED}:
        return None
    wing = ".".join(use.module.split(".")[:2])
    if wing not in TASK_WINGS:
        return f"tasks/ holds wings ({', '.join(sorted(TASK_WINGS))}) and {TASK_SHARED} only"
    if not _within(use.target, {"tasks"}) or _within(use.target, {wing, *TASK_SHARED}):
        return None
    if not _within(use.target, TASK_WINGS[wing]):
        return f"{wing} may use only {sorted(TASK_WINGS[wing]) or 'itself'} of tasks/"
    return None


def _flow_room(use: Use) -> str | None:
    """The room of flows/ a module sits in; None at the top of flows/ or outside it."""
    parts = Path(use.path).parts
    if parts[0] != "flows" or len(parts) < 3:
        return None
    return f"flows.{parts[1]}"


def _flow_rooms(use: Use) -> str | None:
    room = _flow_room(use)
    if room is None or room == FLOW_FACE:
        return None
    if room not in FLOW_ROOMS:
        rooms = ", ".join(sorted([*FLOW_ROOMS, FLOW_FACE]))
        return f"flows/ holds the flows at its top and the rooms {rooms} only"
    if not _within(use.target, {"flows"}) or _within(use.target, {room, *FLOW_ROOMS[room]}):
        return None
    allowed = sorted(FLOW_ROOMS[room]) or "itself"
    return f"{room} may use only {allowed} of flows/: the rooms sit under the flows"


def _prefect_tasks_in_one_place(use: Use) -> str | None:
    if not _within(use.module, {"tasks"}) or _within(use.module, PREFECT_IN_TASKS):
        return None
    if use.target.split(".")[0] == "prefect":
        return "the Prefect tasks live in tasks/steps.py: a wing is plain functions"
    return None


def _plain_before_prefect(use: Use) -> str | None:
    if _within(use.module, BEFORE_PREFECT) and use.target.split(".")[0] == "prefect":
        return "this module runs before Prefect is imported: no prefect import, even a lazy one"
    return None


# The concrete store: above storage/ it is `storage.open_store` and storage.interface.
CONCRETE_STORE = {
    "storage.database.Store",
    "storage.unit_of_work",
    "storage.work_queue",
    "storage.items",
    "storage.claims",
    "storage.queries",
    "storage.chunks",
    "storage.runs",
    "storage.reviews",
    "storage.deliveries",
    "storage.delivery_claims",
    "storage.models",
}


def _store_behind_protocols(use: Use) -> str | None:
    if _within(use.module, {"storage"}) or not _within(use.target, CONCRETE_STORE):
        return None
    return "above storage/ the store is storage.open_store() and storage.interface's Protocols"


def _confined_libraries(use: Use) -> str | None:
    for library, allowed in CONFINED.items():  # a library, or a part of one ("typer._click")
        if _within(use.target, {library}) and not _within(use.module, allowed):
            return f"only {', '.join(allowed)} may import {library}"
    return None


def _environment(use: Use) -> str | None:
    if use.target == "os.environ" and not _within(use.module, ENVIRON_READERS):
        return "nothing but config/ reads os.environ: pass settings in"
    if use.target == "envvar=" and not _within(use.module, ENVVAR_OPTIONS):
        return "an option read from the environment belongs in config/settings.py"
    return None


RULES = [
    _store_behind_protocols,
    _layers,
    _command_line_on_top,
    _audio_engine_is_plain,
    _task_wings,
    _confined_libraries,
    _environment,
    _flow_rooms,
    _plain_before_prefect,
    _prefect_tasks_in_one_place,
]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__.strip("_"))
def test_import_rules_of_the_design_hold(rule) -> None:
    broken = _broken(rule, all_uses())
    if broken:
        pytest.fail("\n".join(broken), pytrace=False)


def test_the_reader_sees_every_wing_and_the_exceptions_still_exist() -> None:
    uses = all_uses()
    wings = {use.module.split(".")[0] for use in uses}
    assert wings == set(PACKAGES)
    targets = {(use.module, use.target.split(".")[0]) for use in uses}
    assert ("tasks.steps", "prefect") in targets
    assert all((module, "prefect") in targets for module in PREFECT_IN_TASKS)
    assert ("storage.models", "sqlalchemy") in targets
    assert ("config.settings", "os") in targets
    assert any(use.target == "os.environ" for use in uses if use.module.startswith("config."))
    # The listed exceptions are used, so the lists do not outlive their reason.
    assert ("flows.deploy", "typer") in targets
    assert ("web.command", "typer") in targets
    assert any(
        use.target == "typer._click" for use in uses if use.module == "flows.cli.vendored_click"
    )
    assert any(use.target == "envvar=" for use in uses if use.module in ENVVAR_OPTIONS)
    assert {_flow_room(use) for use in uses} >= {*FLOW_ROOMS, FLOW_FACE}
    for name in BEFORE_PREFECT:
        path = ROOT / name.replace(".", "/")
        assert path.is_dir() or path.with_suffix(".py").is_file(), name


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "service.client",
            "from tasks.throttle.gate import RequestGate",
            "service/ may import only",
        ),
        ("storage.database", "import flows.cli", "storage/ may import only"),
        ("service.client", "from devserver import DevServer", "service/ may import only"),
        ("tasks.steps", "from devserver.tone import tone", "flows.cli may import devserver"),
        ("devserver.asgi", "from tasks.errors import AudioError", "devserver/ may import only"),
        ("devserver.config", "from service.contract import TRANSCRIBE_PATH", None),
        ("flows.cli.devserver", "from devserver import DevServer", None),
        ("storage.items", "from audit import record_event", "storage/ may import only"),
        ("audit.writer", "from tasks.errors import X", "audit/ may import only"),
        ("audit.writer", "from storage.audit_records import NewAuditEvent", None),
        ("tasks.delivery.deliverer", "from audit import record_event", None),
        ("tasks.transcription.bookkeeping", "from storage.database import Store", "open_store"),
        ("flows.cli.deliver", "from storage.items import Items", "open_store"),
        ("flows.cli.deliver", "from storage.unit_of_work import SqlUnitOfWork", "open_store"),
        ("flows.cli.store", "from storage.database import database_exists", None),
        ("flows.reporting.summary", "from flows.cli.console import print_summary", "sits on top"),
        ("tasks.audio.splitter", "from storage.records import ChunkRecord", "audio engine"),
        ("tasks.audio.splitter", "from prefect import task", "audio engine"),
        ("service.client", "from prefect import task", "only tasks, flows may import prefect"),
        (
            "tasks.transcription.backlog_plan",
            "import sqlalchemy.orm",
            "only storage may import sqlalchemy",
        ),
        (
            "tasks.transcription.backlog_plan",
            "from alembic import command",
            "only storage may import alembic",
        ),
        (
            "flows.backlog",
            "import typer",
            "only flows.cli, flows.deploy, web.command may import typer",
        ),
        (
            "flows.cli.commands",
            "from typer import _click as click",
            "only flows.cli.vendored_click may import typer._click",
        ),
        ("web.command", "import typer._click", "only flows.cli.vendored_click may import"),
        ("flows.cli.run", "from typer._click.core import Context", "may import typer._click"),
        ("flows.cli.vendored_click", "from typer import _click as click", None),
        ("flows.cli.run", "from typer import Option", None),
        ("web.pages", "import sqlalchemy", "only storage may import sqlalchemy"),
        ("web.pages", "from storage.unit_of_work import SqlUnitOfWork", "open_store"),
        ("web.pages", "from flows.reporting.summary import RunSummary", "web/ may import only"),
        ("service.client", "import os\nos.environ.get('X')", "nothing but config/"),
        ("storage.sources", "from os import getenv", "nothing but config/"),
        ("flows.cli.run", "typer.Option(envvar='MEDASR_X')", "belongs in config/settings.py"),
        ("flows.cli.run", "from . import console", None),
        ("config.settings", "from ..tasks import audio", "config/ may import only config"),
        (
            "tasks.delivery.deliverer",
            "from tasks.transcription.recorder import FileRecorder",
            "tasks.delivery may use only",
        ),
        ("tasks.work.journal", "from tasks.throttle.gate import RequestGate", "may use only"),
        ("tasks.transcribe", "import json", "tasks/ holds wings"),
        ("tasks.transcription.backlog_plan", "from tasks.work.journal import Journal", None),
        (
            "flows.reporting.summary",
            "from flows.prefect_runtime.run_logs import FILES_LOGGER",
            "flows.reporting may use only",
        ),
        (
            "flows.prefect_runtime.head_start",
            "from flows.reporting.summary import RunSummary",
            "flows.prefect_runtime may use only",
        ),
        ("flows.setup.bootstrap", "from flows.drain import drain_pending", "may use only"),
        ("flows.reporting.artifacts", "from flows.setup.bootstrap import Run", None),
        ("flows.prefect_runtime.head_start", "from flows.batch_loops import Budget", None),
        ("flows.drain", "from flows.prefect_runtime.run_logs import FileLines", None),
        ("flows.misc.thing", "import json", "flows/ holds the flows at its top and the rooms"),
        ("tasks.work.heap", "from prefect import task", "runs before Prefect is imported"),
        ("flows.prefect_runtime.held_logs", "import prefect.logging", "before Prefect"),
        ("tasks.delivery.deliverer", "from prefect import task", "live in tasks/steps.py"),
        ("tasks.steps", "from prefect import task", None),
    ],
)
def test_a_broken_rule_is_named_with_its_line(module, source, expected) -> None:
    tree = ast.parse(source)
    uses = [
        Use(module, module.replace(".", "/") + ".py", line, target)
        for line, target in _imports(tree, module=module, is_package=False)
    ]
    messages = [message for rule in RULES for message in _broken(rule, uses)]
    if expected is None:
        assert messages == []
    else:
        assert any(expected in message for message in messages), messages
        assert all(message.startswith(f"{module.replace('.', '/')}.py:") for message in messages)


# Names a reader may meet more than once: each wing's error tree, and the command-line
# faces under flows/cli, each named after the command it parses.
REPEATABLE_NAMES = {"__init__", "__main__", "errors"}
FACES = ROOT / "flows" / "cli"


def test_every_module_name_says_one_thing() -> None:
    places: dict[str, list[str]] = {}
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path.stem in REPEATABLE_NAMES or path.is_relative_to(FACES):
                continue
            places.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    repeated = {name: where for name, where in places.items() if len(where) > 1}
    assert repeated == {}
