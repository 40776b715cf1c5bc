"""`main(PORT)` in a child process: become Prefect's temporary server, unless
Prefect's settings say otherwise.

Started by prefect_api.py (beside it) in a command that has not imported Prefect and cannot
read Prefect's settings alone (a profiles file, a prefect.toml, a profile chosen by
name): this child pays for reading them instead. If they name an API (PREFECT_API_URL in
a profile) it prints `configured <url>` and exits 0; if they allow no temporary server
it prints `disabled` and exits 0; else it replaces itself with the server, started as
Prefect starts it, with the environment the parent would have given it. The kernel's
death signal set by the parent survives the exec.
"""

from __future__ import annotations

import os

from prefect.settings import (
    PREFECT_API_URL,
    PREFECT_SERVER_EPHEMERAL_ENABLED,
    get_current_settings,
)

from config.runtime import temporary_server_environment
from flows.prefect_runtime.prefect_api import CONFIGURED
from flows.prefect_runtime.prefect_schema import skip_migrations
from flows.prefect_runtime.server_process import server_command


def main(port: int) -> None:
    """Say what Prefect's settings choose, or exec the server on `port`."""
    url = PREFECT_API_URL.value()
    if url:
        print(f"{CONFIGURED}{url}", flush=True)
        return
    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        print("disabled", flush=True)
        return
    environment = temporary_server_environment(
        get_current_settings().to_environment_variables(exclude_unset=True)
    )
    environment |= skip_migrations(environment)
    os.dup2(2, 1)  # the parent reads our stdout only for the lines above
    command = server_command(port)
    os.execve(command[0], command, environment)  # noqa: S606 (our own Python, no shell)
