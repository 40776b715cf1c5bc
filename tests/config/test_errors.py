"""One error tree, one set of run-stopping errors, one table of exit codes (config/errors.py)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.errors import (
    EXIT_CODES,
    RUN_STOP_ERRORS,
    ConfigError,
    MedasrError,
    RunInterrupted,
    TerminalError,
    TransientError,
)
from service.errors import CredentialsRejected, PayloadTooLarge, Throttled, TlsNotVerified
from storage.errors import (
    DraftInTheWay,
    LeaseLost,
    NotEditable,
    NotUnderReview,
    ReviewRefused,
    SchemaOutdated,
    SourceNotFound,
    StaleRevision,
)
from tasks.errors import AudioError, DamagedTail, SharedLimitUnavailable
from tasks.review.language_change import LanguageNotTaken

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("audit", "config", "service", "devserver", "storage", "tasks", "flows", "web")
# Classes that keep their parent's kind on purpose; every other one names its own.
SHARES_PARENT_KIND = {
    # Stored as "corrupt_audio" like the whole-file failure: the partial contract
    # (extras["partial"]["error_kind"]) and the export read that kind.
    "tasks.errors.DamagedTail",
    # A manifest language the service does not take is one more unusable manifest value:
    # the status, the export and a person read the one kind "metadata_invalid".
    "tasks.errors.LanguageInvalid",
}


def _import_every_module() -> None:
    for top in PACKAGES:
        package = importlib.import_module(top)
        for module in pkgutil.walk_packages(package.__path__, f"{top}."):
            # __main__ runs the command line; Alembic's env.py runs a migration on import.
            if module.name.endswith(".__main__") or module.name.startswith("storage.migrations"):
                continue
            importlib.import_module(module.name)


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def medasr_errors() -> list[type[MedasrError]]:
    """Every MedasrError subclass defined in medasr's packages (not in tests)."""
    _import_every_module()
    found = {cls for cls in _subclasses(MedasrError) if cls.__module__.split(".")[0] in PACKAGES}
    return sorted(found, key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_error_kind_is_unique_across_the_codebase() -> None:
    errors = medasr_errors()
    assert len(errors) > 30  # the walk found the wings, not only config/errors.py
    owners: dict[str, list[str]] = {MedasrError.kind: [_name(MedasrError)]}
    inherited = []
    for cls in errors:
        if "kind" in vars(cls):
            owners.setdefault(cls.kind, []).append(_name(cls))
        else:
            inherited.append(_name(cls))
    clashes = {kind: names for kind, names in owners.items() if len(names) > 1}
    assert not clashes, f"kinds declared by more than one class: {clashes}"
    unexplained = sorted(set(inherited) - SHARES_PARENT_KIND)
    assert not unexplained, f"errors without a kind of their own: {unexplained}"
    assert set(inherited) == SHARES_PARENT_KIND  # the exceptions listed still exist


def test_every_errors_module_draws_each_of_its_classes() -> None:
    missing = []
    for cls in medasr_errors():
        module = inspect.getmodule(cls)
        assert module is not None
        if module.__name__.endswith("errors") and cls.__name__ not in (module.__doc__ or ""):
            missing.append(_name(cls))
    assert not missing, f"errors modules whose docstring tree lacks: {missing}"


@pytest.mark.parametrize(
    "error",
    [
        CredentialsRejected("401", status=401),
        ConfigError("bad setting"),
        RunInterrupted("ctrl-c"),
        TlsNotVerified("certificate"),
        SchemaOutdated("old schema"),
        SharedLimitUnavailable("no slot"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_run_stopping_errors_stop_the_run(error: MedasrError) -> None:
    assert isinstance(error, RUN_STOP_ERRORS)
    assert isinstance(error, TerminalError)


@pytest.mark.parametrize(
    "error",
    [
        PayloadTooLarge("too big"),
        Throttled("429"),
        LeaseLost("taken over"),
        SourceNotFound("gone"),
        AudioError("bad audio"),
        DamagedTail("cut short", path=None, damaged_at_ms=1000),
        TransientError("later"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_one_files_errors_do_not_stop_the_run(error: MedasrError) -> None:
    assert not isinstance(error, RUN_STOP_ERRORS)


@pytest.mark.parametrize(
    "error",
    [
        NotUnderReview("not waiting"),
        StaleRevision("saved over"),
        DraftInTheWay(1, "a draft"),
        NotEditable("no transcript"),
        LanguageNotTaken("not taken"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_refused_review_decision_is_no_setting_and_stops_no_run(error: MedasrError) -> None:
    """The workstation's 409/400 outcomes: what a reviewer asked, not configuration."""
    assert isinstance(error, ReviewRefused)
    assert not isinstance(error, ConfigError)
    assert not isinstance(error, RUN_STOP_ERRORS)
    assert isinstance(error, TerminalError)


def test_kinds_stored_in_the_database_keep_their_names() -> None:
    """Moving an error in the tree never renames the kind a stored failure carries."""
    kinds = {cls.__name__: cls.kind for cls in medasr_errors()}
    assert {name: kinds[name] for name in ("NotUnderReview", "StaleRevision", "DraftInTheWay",
            "NotEditable", "LanguageNotTaken")} == {
        "NotUnderReview": "not_under_review", "StaleRevision": "stale_revision",
        "DraftInTheWay": "draft_in_the_way", "NotEditable": "not_editable",
        "LanguageNotTaken": "language_invalid",
    }  # fmt: skip


def readme_exit_codes() -> set[int]:
    """The codes in the first column of the exit-code table of docs/troubleshooting.md."""
    page = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    section = page.split("# Troubleshooting by exit code", 1)[1].split("\n## ", 1)[0]
    return {int(code) for code in re.findall(r"^\| *(\d+) *\|", section, flags=re.MULTILINE)}


def test_every_exit_code_is_documented_in_the_readme_and_no_other() -> None:
    documented = readme_exit_codes()
    assert documented, "the exit-code table of docs/troubleshooting.md was not found"
    assert sorted(set(EXIT_CODES) - documented) == [], "exit codes missing from the docs"
    assert sorted(documented - set(EXIT_CODES)) == [], "documented codes not in EXIT_CODES"


def _exit_code_sites(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each EXIT_* definition and each exit with a literal number."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.startswith("EXIT_"):
                    yield node.lineno, f"defines {target.id}"
        if isinstance(node, ast.Call) and node.args:
            func = ast.unparse(node.func)
            literal = isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is int
            if literal and func in {"typer.Exit", "sys.exit", "os._exit", "SystemExit"}:
                yield node.lineno, f"calls {func}({node.args[0].value})"


def test_exit_codes_come_from_the_one_table() -> None:
    home = ROOT / "config" / "errors.py"
    elsewhere = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == home:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for line, what in _exit_code_sites(tree):
                elsewhere.append(f"{path.relative_to(ROOT)}:{line} {what}")
    assert not elsewhere, "use config/errors.py's EXIT_* names:\n" + "\n".join(elsewhere)
