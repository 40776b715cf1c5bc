"""The root of every medasr error, the errors that stop a whole run, and the exit codes.

Each wing keeps its own errors module; all of them hang off these roots so a caller can
decide "retry later", "give up on this item" or "stop the run" without knowing the wing::

    MedasrError                      kind: str, transient: bool, message for a person
    ├── TransientError               worth retrying later (network, throttling, lease lost)
    └── TerminalError                retrying the same thing gives the same answer
        ├── InternalError            a bug caught at a file boundary; the batch goes on
        ├── ReviewRefused            a reviewer's decision refused, nothing changed (the
        │                            workstation's 409/400, exit code 2); its kinds live
        │                            in storage/errors.py
        └── RunStop                  not a file's fault: the whole run stops, files not
            │                        yet finished go back to pending (RUN_STOP_ERRORS)
            ├── ConfigError          a setting is missing or invalid (exit code 2)
            ├── RunInterrupted       the operator stopped the run: Ctrl-C, SIGTERM (exit 130)
            ├── PrefectDidNotStart   flows/prefect_runtime/prefect_api.py: the temporary
            │                        server never answered (exit 75, try again; not a
            │                        setting's fault)
            └── CredentialsRejected  401/403 (exit code 3); lives in service/errors.py

Wings: service/errors.py (talking to the service), storage/errors.py (sources and the
store), tasks/errors.py (the audio engine, the shared limit), tasks/delivery/errors.py
(documents for the patient record).
`EXIT_CODES` is the one table of the `medasr` command's exit codes;
docs/troubleshooting.md documents each (tests/config/test_errors.py checks it).
`exit_code_for` and `error_line` are the one reading of an error a command ends on
(flows/cli/error_exits.py and `medasr web` print them); `exit_code_of` a run's.
Messages never contain a token, a key or transcript text. What a receiver said in its
own words (an OperationOutcome's diagnostics, an ACK's text) is an error's `detail`: it
often names the patient, so it is stored with the failure and never logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, Final


class MedasrError(Exception):
    """Base of all medasr errors; `kind` is the stable name stored in the database."""

    kind: ClassVar[str] = "error"
    transient: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.detail = ""  # a receiver's own words: stored with the failure, never logged

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


class InternalError(TerminalError):
    """A bug in medasr caught at a file boundary so that the rest of the batch goes on."""

    kind = "internal_error"


class ReviewRefused(TerminalError):
    """A reviewer's decision refused (asked of the wrong recording, or of a page someone
    has saved over since): nothing changed. What a person asked, not a setting: it stops
    no run."""

    kind = "review_refused"


class RunStop(TerminalError):
    """Stops the whole run, not one file: nothing more is sent, unfinished files stay pending."""

    kind = "run_stop"


class ConfigError(RunStop):
    """A setting is missing or invalid; the message names the variable to fix."""

    kind = "config"


class RunInterrupted(RunStop):
    """The operator stopped the run (SIGINT or SIGTERM); files not yet sent stay pending."""

    kind = "interrupted"


# For `except` and isinstance: what stops a run at once (a file meeting one goes back to
# pending). RunStop is its only member; the name is what call sites import.
RUN_STOP_ERRORS: Final = (RunStop,)

EXIT_OK: Final = 0
EXIT_SOME_FAILED: Final = 1
EXIT_USAGE: Final = 2
EXIT_CREDENTIALS: Final = 3
EXIT_TEMPORARY: Final = 75  # sysexits.h EX_TEMPFAIL: a cron job may simply try again
EXIT_INTERRUPTED: Final = 130  # 128 + SIGINT, as shells report an interrupted command

# Every exit code of the `medasr` command, and what it means.
EXIT_CODES: Final[Mapping[int, str]] = MappingProxyType(
    {
        EXIT_OK: "everything asked for is done",
        EXIT_SOME_FAILED: "some files failed, were skipped as silent or wait for review, "
        "or some documents failed or are in doubt (or a store or audio error outside a run)",
        EXIT_USAGE: "usage or configuration error (a ConfigError, a refused review decision): "
        "nothing was sent",
        EXIT_CREDENTIALS: "credentials rejected (401/403): the run stopped at once",
        EXIT_TEMPORARY: "Prefect's temporary server did not start (a busy host): nothing "
        "was sent; try again later",
        EXIT_INTERRUPTED: "interrupted by the operator (Ctrl-C or SIGTERM)",
    }
)


def exit_code_of(
    *,
    credentials_rejected: bool = False,
    stopped_by_configuration: bool = False,
    interrupted: bool = False,
    needs_a_person: bool = False,
) -> int:
    """The one reading of EXIT_CODES, for a run and a delivery alike: 3 credentials
    rejected, 2 a setting stopped it, 130 interrupted, 1 something a person must look at
    (failed, skipped, needs review, a delivery in doubt), else 0."""
    if credentials_rejected:
        return EXIT_CREDENTIALS
    if stopped_by_configuration:
        return EXIT_USAGE
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_SOME_FAILED if needs_a_person else EXIT_OK


def exit_code_for(exc: MedasrError) -> int:
    """The exit code of a command ended by `exc`: 2 a setting or a refused review
    decision (the command was asked the wrong thing), else 1 (a store, audio or
    delivery error)."""
    return EXIT_USAGE if isinstance(exc, ConfigError | ReviewRefused) else EXIT_SOME_FAILED


def error_line(exc: MedasrError) -> str:
    """The one line a person reads for `exc`: `medasr: <what it is>: <message>`."""
    if isinstance(exc, ReviewRefused):
        return f"medasr: usage error: {exc}"
    if isinstance(exc, ConfigError):
        return f"medasr: configuration error: {exc}"
    return f"medasr: {exc}"
