"""Click as Typer carries it: the one import of Typer's private `typer._click`.

Typer 0.29 vendors its own copy of click and types its command API with that copy:
TyperGroup, TyperCommand and `typer.main.get_command` take and return its `Command` and
`Context`, not those of the `click` package (which medasr does not depend on). The
command line's hints, and the Context it builds to name option values, must be the
vendored ones. The module is private to Typer, so it is named here only
(tests/test_layout.py): a Typer release that moves it changes this file alone.
"""

from __future__ import annotations

from typer import _click as click

__all__ = ["click"]
