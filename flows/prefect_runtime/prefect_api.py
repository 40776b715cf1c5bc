"""The Prefect API of a command's flow run: a long-running server, checked first, or a
temporary one started early.

With PREFECT_API_URL set, that server's health endpoint is asked once before anything
else, so an unreachable server is one sentence (exit 2) instead of the flow engine's
traceback.
Without it, Prefect would start its temporary server on the flow's first call, after
importing its whole server package into this process (seconds) and with nothing else
to do while the server boots. `start_prefect_api` launches the same server
(the command Prefect's own `SubprocessASGIServer` runs) in a subprocess at once, so
it boots while the command opens the store and lists the source; the flow then runs
against it through PREFECT_API_URL (a temporary settings override of this process).
The temporary server skips what a single run never reads: automations, event
storage and streaming, block registration (config/runtime.py says which settings).
Its clients in this process trust one certificate nobody holds the key of
(loopback_trust.pem): the server speaks plain HTTP, and Prefect would otherwise load
the whole CA bundle for each client it makes.
It dies with the medasr process that started it, however that ends (SIGKILL, a
second Ctrl-C): on Linux the kernel sends it SIGKILL when its parent goes
(PR_SET_PDEATHSIG, set between fork and exec). A slow start on a busy host is waited
for while the server's process makes progress (start_progress.py; said after a few
seconds), with MEDASR_PREFECT_START_TIMEOUT_S as the last resort; one that exits,
stops progressing or outlasts that limit is PrefectDidNotStart (exit 75), not a
configuration error.
A command that has not imported Prefect yet (`medasr run` from a terminal) does not
import it to start the server, so the command's first requests do not wait for
Prefect's import; the flow imports it later. When only the environment and Prefect's
bundled profile apply (config/runtime.py reads them), the server is started at once;
otherwise a launcher child (flows/prefect_runtime/prefect_launch.py) reads Prefect's settings and
becomes the server (an import of Prefect in that child: about a second of CPU).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import httpx

from config.errors import ConfigError, RunStop
from config.runtime import (
    bundled_profile_settings,
    prefect_settings_beyond_environment,
    temporary_server_allowed,
    temporary_server_environment,
)
from flows.prefect_runtime.prefect_schema import skip_migrations
from flows.prefect_runtime.server_process import die_with_this_process, free_port, server_command
from flows.prefect_runtime.start_progress import STALL_S, StartProgress

NO_API = (
    "no Prefect API: set PREFECT_API_URL (e.g. http://127.0.0.1:4200/api) or "
    "PREFECT_SERVER_EPHEMERAL_ENABLED=true"
)
CONFIGURED = "configured "  # the launcher's line when Prefect's settings name an API
HEALTH_TIMEOUT_S = 15.0
WAIT_NOTICE_S = 5.0  # a start slower than this is said, once
_POLL_S = 0.1
_STOP_WAIT_S = 5.0
LOOPBACK_TRUST = Path(__file__).with_name("loopback_trust.pem")


class PrefectUnavailable(ConfigError):
    """No Prefect API to run the flow against (terminal: a setting or the server)."""

    kind = "prefect_unavailable"


class PrefectDidNotStart(RunStop):
    """Prefect's temporary server did not answer in time or exited while starting."""

    kind = "prefect_did_not_start"


class PrefectApi:
    """A Prefect API that flow runs may use once `ready()` has returned."""

    def __init__(self, *, server: _TemporaryServer | None = None) -> None:
        self._server = server  # None: a configured API, checked when it was chosen

    @property
    def starting(self) -> bool:
        """A temporary server is (or may be) booting: a run may begin requests meanwhile."""
        return self._server is not None

    async def ready(self) -> None:
        """Wait for the temporary server (a configured one was checked when it was
        chosen); raises PrefectDidNotStart, PrefectUnavailable."""
        if self._server is None:
            return
        try:
            await self._server.wait_healthy()
        except _ConfiguredInSettings as configured:
            self._server = None
            await asyncio.to_thread(_check_configured, configured.url)

    @contextmanager
    def in_use(self) -> Iterator[None]:
        """While active, Prefect clients of this process talk to this API."""
        if self._server is None:
            yield
            return
        from prefect.settings import PREFECT_API_SSL_CERT_FILE, PREFECT_API_URL, temporary_settings

        # Our own server, plain HTTP: no certificate file can matter to it (SSL_CERT_FILE,
        # PREFECT_API_SSL_CERT_FILE are for servers that speak TLS), so none is loaded.
        updates: dict[Any, Any] = {
            PREFECT_API_URL: self._server.api_url,
            PREFECT_API_SSL_CERT_FILE: str(LOOPBACK_TRUST),
        }
        with (
            temporary_settings(updates=updates),
            _without_view_at_links(),
        ):
            yield

    def stop(self) -> None:
        """Stop the temporary server now (it is stopped at exit anyway)."""
        if self._server is not None:
            self._server.stop()


class _NoViewAtLink(logging.Filter):
    """Drops Prefect's "View at http://.../runs/..." line: a temporary server is gone when
    the command ends, so its link would lead nowhere."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("View at ")


@contextmanager
def _without_view_at_links() -> Iterator[None]:
    """While a temporary server serves this process's flow runs: no link to it."""
    loggers = [logging.getLogger(name) for name in ("prefect.engine", "prefect.flow_runs")]
    link_filter = _NoViewAtLink()
    for logger in loggers:
        logger.addFilter(link_filter)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(link_filter)


def start_prefect_api(*, start_timeout_s: float, stall_s: float = STALL_S) -> PrefectApi:
    """The configured API, or a temporary server starting in the background now, waited
    for while it uses CPU (at most `stall_s` without) and at most `start_timeout_s`.
    Raises PrefectUnavailable."""
    if "prefect" not in sys.modules and not prefect_settings_beyond_environment():
        # Only Prefect's defaults apply. Its bundled profile, read here, usually says
        # enough to start the server at once; else a launcher child reads them (and
        # would still say so if they named an API). This process need not import Prefect.
        profile = bundled_profile_settings()
        allowed = None if profile is None else temporary_server_allowed(profile)
        if allowed is False:
            raise PrefectUnavailable(NO_API)
        launched = _TemporaryServer(
            start_timeout_s=start_timeout_s,
            launcher=allowed is None,
            settings=profile,
            stall_s=stall_s,
        )
        launched.start()
        return PrefectApi(server=launched)
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    url = PREFECT_API_URL.value()
    if url:
        _check_configured(str(url))
        return PrefectApi()
    if not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        raise PrefectUnavailable(NO_API)
    server = _TemporaryServer(start_timeout_s=start_timeout_s, stall_s=stall_s)
    server.start()
    return PrefectApi(server=server)


def _check_configured(url: str) -> None:
    """Ask the configured server's health endpoint once; raises PrefectUnavailable."""
    failure = asyncio.run(health_failure())
    if failure is not None:
        raise PrefectUnavailable(
            f"no Prefect server answers at PREFECT_API_URL={url} "
            f"({type(failure).__name__}): start it with `prefect server start`, "
            "or unset PREFECT_API_URL to let medasr start a temporary one"
        )


async def health_failure() -> Exception | None:
    """None if the configured Prefect API answers its health check, else the error."""
    from prefect.client.orchestration import get_client

    try:
        async with asyncio.timeout(HEALTH_TIMEOUT_S), get_client() as client:
            return await client.api_healthcheck()
    except TimeoutError as exc:
        return exc


class _TemporaryServer:
    """Prefect's API server in a subprocess on a free loopback port, as Prefect runs it."""

    def __init__(
        self,
        *,
        start_timeout_s: float,
        launcher: bool = False,
        settings: dict[str, str] | None = None,
        stall_s: float = STALL_S,
    ) -> None:
        self.port = 0
        self._start_timeout_s = start_timeout_s
        self._stall_s = stall_s
        self._launcher = launcher  # started through flows/prefect_runtime/prefect_launch.py
        self._settings = settings  # Prefect's settings beyond the environment, if known
        self._process: subprocess.Popen[bytes] | None = None
        self._started_at = 0.0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def start(self) -> None:
        self.port = free_port()
        self._started_at = time.monotonic()
        if self._launcher:  # it reads Prefect's settings and execs the same server
            # The launcher of this very checkout (a bench runs others from sys.path).
            root = str(Path(__file__).resolve().parents[1])
            launch = (
                f"import sys; sys.path.insert(0, {root!r}); "
                f"from flows.prefect_runtime.prefect_launch import main; main({self.port})"
            )
            self._process = subprocess.Popen(
                [sys.executable, "-c", launch],
                stdout=subprocess.PIPE,
                preexec_fn=die_with_this_process(),
                process_group=0,  # a terminal's Ctrl-C is medasr's, which ends the run
            )
        else:
            environment = temporary_server_environment(self._prefect_settings())
            environment |= skip_migrations(environment)
            self._process = subprocess.Popen(
                server_command(self.port),
                env=environment,
                preexec_fn=die_with_this_process(),
                process_group=0,
            )
        atexit.register(self.stop)  # after Prefect's own exit hooks have sent its logs

    def _prefect_settings(self) -> dict[str, str]:
        """Prefect's settings this process holds, as environment variables."""
        if self._settings is not None:
            return self._settings
        from prefect.settings import get_current_settings

        found: dict[str, str] = get_current_settings().to_environment_variables(exclude_unset=True)
        return found

    async def wait_healthy(self) -> None:
        """Return once the server answers. Raises PrefectDidNotStart if it exits, stops
        making progress (start_progress.py) or is later than the wall-clock limit."""
        assert self._process is not None, "start() first"
        progress = StartProgress(self._process.pid, stall_s=self._stall_s)
        noticed = False
        # Plain HTTP on loopback: a context of one certificate, not the whole CA bundle.
        trust = ssl.create_default_context(cafile=LOOPBACK_TRUST)
        async with httpx.AsyncClient(timeout=2.0, verify=trust) as http:
            while (waited_s := time.monotonic() - self._started_at) < self._start_timeout_s:
                self._require_running()
                try:
                    if (await http.get(f"{self.api_url}/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if progress.stuck():
                    self._give_up(f"made no progress (used no CPU) for {progress.stall_s:.0f} s")
                if not noticed and waited_s >= WAIT_NOTICE_S:
                    noticed = True
                    # Progress, not an error: stdout, like "N files to process".
                    print(
                        "medasr: waiting for Prefect's temporary server to start (the host "
                        "is busy: waited for while it makes progress, at most "
                        f"{self._start_timeout_s:.0f} s, MEDASR_PREFECT_START_TIMEOUT_S)",
                        flush=True,
                    )
                await asyncio.sleep(_POLL_S)
        self._give_up(f"did not start in {waited_s:.0f} s (MEDASR_PREFECT_START_TIMEOUT_S)")

    def _give_up(self, what: str) -> NoReturn:
        self.stop()
        raise PrefectDidNotStart(
            f"Prefect's temporary server {what}: try again, raise the limit, or set "
            "PREFECT_API_URL to a running `prefect server start`"
        )

    def _require_running(self) -> None:
        assert self._process is not None, "start() first"
        if self._process.poll() is not None and self._launcher and self._process.returncode == 0:
            self._launcher_said()
        if self._process.poll() is not None:
            raise PrefectDidNotStart(
                "Prefect's temporary server stopped while starting (exit code "
                f"{self._process.returncode}): set PREFECT_API_URL to a "
                "running `prefect server start`"
            )

    def _launcher_said(self) -> None:
        """The launcher exited without becoming the server: Prefect's settings name an
        API (raises _ConfiguredInSettings) or allow no temporary server (raises
        PrefectUnavailable)."""
        assert self._process is not None
        assert self._process.stdout is not None
        said = self._process.stdout.read().decode().strip()
        self._process.stdout.close()
        self._process = None
        if said.startswith(CONFIGURED):
            raise _ConfiguredInSettings(said.removeprefix(CONFIGURED).strip())
        raise PrefectUnavailable(NO_API)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:  # the launcher's pipe
            process.stdout.close()


class _ConfiguredInSettings(Exception):
    """Prefect's settings (a profile) name an API: no temporary server was started."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url
