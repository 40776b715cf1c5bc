"""Private folders (0700) and new private files (0600, never over an old file nor through
a planted link) are made in one place, config/private_files.py."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.private_files import (
    create_private_file,
    make_private_folders,
    open_private_file,
    write_private_file,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("audit", "config", "service", "devserver", "storage", "tasks", "flows", "web")
HOME = "config/private_files.py"
# The devserver (a stand-in of the service, not medasr) keeps its own ledger file.
ELSEWHERE_ALLOWED = ("devserver/",)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    before = os.umask(0o022)
    yield
    os.umask(before)


def test_each_missing_folder_is_made_private_and_an_existing_one_is_kept(
    tmp_path: Path, umask_022: None
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir(mode=0o755)
    make_private_folders(kept / "a" / "b")
    assert [_mode(p) for p in (kept, kept / "a", kept / "a" / "b")] == [0o755, 0o700, 0o700]
    make_private_folders(kept / "a" / "b")  # made already: nothing to do, no error


def test_a_new_file_is_private_and_never_replaces_nor_follows(
    tmp_path: Path, umask_022: None
) -> None:
    write_private_file(tmp_path / "new.wav", b"RIFF")
    assert (_mode(tmp_path / "new.wav"), (tmp_path / "new.wav").read_bytes()) == (0o600, b"RIFF")
    old = tmp_path / "old.txt"
    old.write_bytes(b"old")
    old.chmod(0o644)
    with pytest.raises(FileExistsError):
        write_private_file(old, b"new")
    assert (_mode(old), old.read_bytes()) == (0o644, b"old")
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "planted").symlink_to(elsewhere)
    with pytest.raises(FileExistsError):
        open_private_file(tmp_path / "planted")
    assert not elsewhere.exists()
    folder_fd = os.open(tmp_path, os.O_RDONLY)
    try:
        os.close(create_private_file("beside.txt", dir_fd=folder_fd))
    finally:
        os.close(folder_fd)
    assert _mode(tmp_path / "beside.txt") == 0o600


def _private_modes_made_by_hand(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value in (
            0o600, 0o700,
        ):  # fmt: skip
            yield node.lineno, oct(node.value)
        if isinstance(node, ast.Attribute) and node.attr == "O_EXCL":
            yield node.lineno, "O_EXCL"


def test_private_folders_and_files_are_made_in_one_place() -> None:
    by_hand = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name == HOME or name.startswith(ELSEWHERE_ALLOWED):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            by_hand += [f"{name}:{line} {what}" for line, what in _private_modes_made_by_hand(tree)]
    assert by_hand == [], f"use {HOME}"
