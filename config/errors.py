"""The root of every medasr error, and the configuration wing.

Each wing keeps its own errors module; all of them hang off these two roots so a
caller can decide "retry later" or "give up on this item" without knowing the wing::

    MedasrError                      kind: str, transient: bool, message for a person
    ├── TransientError               worth retrying later (network, throttling, lease lost)
    └── TerminalError                retrying the same thing gives the same answer
        └── ConfigError              a setting is missing or invalid (exit code 2)

Wings: service/errors.py (talking to the service), tasks/errors.py (audio),
storage/errors.py (sources and the store).
Messages never contain a token, a key or transcript text.
"""

from __future__ import annotations

from typing import ClassVar


class MedasrError(Exception):
    """Base of all medasr errors; `kind` is the stable name stored in the database."""

    kind: ClassVar[str] = "error"
    transient: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class TransientError(MedasrError):
    """A failure that may pass if the same thing is tried again later."""

    kind = "transient"
    transient = True


class TerminalError(MedasrError):
    """A failure that repeats if the same thing is tried again."""

    kind = "terminal"
    transient = False


class ConfigError(TerminalError):
    """A setting is missing or invalid; the message names the variable to fix."""

    kind = "config"


class InternalError(TerminalError):
    """A bug in medasr caught at a file boundary so that the rest of the batch goes on."""

    kind = "internal_error"
