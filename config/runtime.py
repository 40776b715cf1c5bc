"""Process-wide defaults for the libraries medasr drives, set before they read them."""

from __future__ import annotations

import importlib.util
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

# Defaults only: an operator's own PREFECT_* values always win.
_PREFECT_DEFAULTS = {
    # Hospitals do not want usage telemetry leaving the building: not from the server,
    # and not from the client (which would also print a notice about it on first use).
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    # The ephemeral API server logs a traceback for events still queued when it stops
    # at the end of a run; those events are Prefect's own bookkeeping, not our results.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
}


# numpy's OpenBLAS starts a thread per further core on import, which spins for a while:
# 0.1 s of CPU at each start of a command (`import numpy` alone), for matrix products
# the pipeline never makes. One thread: none started. An operator's own value wins.
_NUMPY_DEFAULTS = {"OPENBLAS_NUM_THREADS": "1"}


def ffmpeg_named_in_environment() -> str | None:
    """IMAGEIO_FFMPEG_EXE, imageio-ffmpeg's variable naming an ffmpeg binary, if set."""
    return os.environ.get("IMAGEIO_FFMPEG_EXE") or None


def prefect_api_url_in_environment() -> str | None:
    """PREFECT_API_URL as the environment gives it (without its trailing slash), if set."""
    return os.environ.get("PREFECT_API_URL", "").rstrip("/") or None


def prefect_settings_beyond_environment() -> bool:
    """Whether Prefect's settings may name an API: PREFECT_API_URL in the environment, a
    profiles file, or a prefect.toml, .env or pyproject.toml [tool.prefect] in the
    working directory (where Prefect looks). Without any, only defaults apply."""
    if os.environ.get("PREFECT_API_URL"):
        return True
    home = Path(os.environ.get("PREFECT_HOME", "~/.prefect")).expanduser()
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH", home / "profiles.toml"))
    if profiles.expanduser().exists():
        return True
    here = Path.cwd()
    if (here / "prefect.toml").exists() or (here / ".env").exists():
        return True
    try:
        pyproject = tomllib.loads((here / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return "prefect" in pyproject.get("tool", {})


def prepare_prefect_environment() -> None:
    """Fill in Prefect defaults that suit a batch job; call before Prefect is imported.

    Entry points call it (the command's `main`); importing a module never does."""
    _fill_in(_PREFECT_DEFAULTS)


def prepare_numpy_environment() -> None:
    """Fill in numpy's defaults for a command; call before numpy is imported (entry
    points do, as for Prefect)."""
    _fill_in(_NUMPY_DEFAULTS)


def _fill_in(defaults: Mapping[str, str]) -> None:
    """Set each of `defaults` the environment does not name: an operator's value wins."""
    for name, value in defaults.items():
        os.environ.setdefault(name, value)


# The temporary Prefect server of one `medasr run` (flows/prefect_runtime/prefect_api.py):
# what Prefect's own start of it sets, plus what a single run never reads. Flow and task runs, logs,
# artifacts and concurrency limits stay; automations (triggers, actions), stored and
# streamed events and the registration of Prefect's block types go.
# Not PREFECT__SERVER_FINAL, which Prefect's own start sets: with the FastAPI we pin
# (>= 0.137) its one effect is a full collection once the app is built, 0.3 s of the
# boot's CPU over objects that live as long as the server, freeing nothing measurable
# (171 MB resident either way). Nor the runtime type checks py-key-value (the server's
# task queue, docket) puts on its own calls: they only warn, into a log no one reads
# here, and cost 0.1 s of the boot.
_TEMPORARY_SERVER = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false",
    "PREFECT_SERVER_EVENTS_STREAM_OUT_ENABLED": "false",
    "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
    "PY_KEY_VALUE_DISABLE_BEARTYPE": "true",
}


def temporary_server_environment(prefect_settings: Mapping[str, str]) -> dict[str, str]:
    """The environment of a temporary Prefect server: this one, medasr's defaults and its
    trims, then the Prefect settings this process holds (an operator's own values win over
    the defaults and the trims), whether or not this process ran an entry point."""
    defaults = {**_PREFECT_DEFAULTS, **_TEMPORARY_SERVER}
    trims = {k: v for k, v in defaults.items() if k not in os.environ}
    return {**os.environ, **trims, **prefect_settings}


# Prefect's names for "a temporary server may be started" (aliases of one setting).
_EPHEMERAL_NAMES = ("PREFECT_SERVER_EPHEMERAL_ENABLED", "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE")
_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})
_FALSE = frozenset({"0", "false", "f", "no", "n", "off"})


def bundled_profile_settings() -> dict[str, str] | None:
    """The settings of Prefect's active profile when only its bundled profiles.toml and
    the environment apply, read without importing Prefect (an import costs a second of
    CPU); None when Prefect alone can tell (a profiles file, a prefect.toml, a profile
    chosen by name, a value this reading does not know)."""
    if prefect_settings_beyond_environment() or os.environ.get("PREFECT_PROFILE"):
        return None
    spec = importlib.util.find_spec("prefect")  # found, not imported
    if spec is None or spec.origin is None:
        return None
    try:
        bundled = Path(spec.origin).parent / "settings" / "profiles.toml"
        profiles = tomllib.loads(bundled.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    profile = profiles.get("profiles", {}).get(profiles.get("active"))
    if not isinstance(profile, dict) or "PREFECT_API_URL" in profile:
        return None
    return {str(key): str(value) for key, value in profile.items() if key not in os.environ}


def temporary_server_allowed(profile: Mapping[str, str]) -> bool | None:
    """Whether Prefect may start a temporary server, per the environment, then `profile`;
    None when the value is not one this reading knows."""
    for source in (os.environ, profile):
        for name in _EPHEMERAL_NAMES:
            if name in source:
                value = source[name].strip().lower()
                return True if value in _TRUE else False if value in _FALSE else None
    return False


# What a decoding worker's Python needs of the environment (tasks/audio/decoder_pool.py):
# no token, key or password (it reads paths and writes samples), and no PYTHONPATH or
# PYTHONSTARTUP that could load other code into it.
_DECODING_WORKER_KEEPS = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "HOME")


def decoding_worker_environment() -> dict[str, str]:
    """The environment of a libav decoding worker: this one's locale, paths and nothing else."""
    return {name: os.environ[name] for name in _DECODING_WORKER_KEEPS if name in os.environ}
