"""Every option of the devserver, as one frozen value with the defaults of `medasr devserver`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from config.errors import ConfigError
from devserver.text_faults import text_fault_problems
from service import jwe
from service.contract import SERVICE_MAX_UPLOAD_BYTES
from service.errors import EncryptionError

# Names a fault script may use; "ok" lets a request through untouched. Each other name
# has a --rate-<name> flag; "badjson" is a 200 whose body is not JSON, "notext" a 200
# JSON object without "text", "endless" a 200 (201 on FHIR, after filing) whose body
# never ends.
FAULT_NAMES: Final = (
    "ok", "429", "500", "502", "503", "504", "reset", "slow", "badjson", "notext", "endless",
)  # fmt: skip
ENGINE_NAMES: Final = ("default", "tone", "hash")
# How a FHIR create is answered once the resource is filed (devserver/fhir_route.py):
# "resource" as FHIR R4 says; the others as a misbehaving server might.
FHIR_ANSWERS: Final = ("resource", "outcome", "foreign", "patient", "refuse", "first")


@dataclass(frozen=True)
class DevServerConfig:
    """Options of the local stand-in service; raises ConfigError when one is out of range."""

    host: str = "127.0.0.1"
    port: int = 8765
    # Static accepted token (None -> mint a signed dev token); secrets stay out of reprs.
    token: str | None = field(default=None, repr=False)
    token_ttl_s: float = 86_400.0  # lifetime of the minted dev token
    jwe_key: str | None = field(default=None, repr=False)
    jwe_kid: str | None = None
    max_bytes: int = SERVICE_MAX_UPLOAD_BYTES
    latency_ms: float = 0.0
    rate_429: float = 0.0
    retry_after_s: int = 1
    retry_after_http_date: bool = False
    rate_500: float = 0.0
    rate_502: float = 0.0
    rate_503: float = 0.0
    rate_504: float = 0.0
    rate_reset: float = 0.0
    rate_slow: float = 0.0
    rate_badjson: float = 0.0
    rate_notext: float = 0.0
    rate_endless: float = 0.0
    slow_s: float = 2.0
    # Text faults on answers that carry a text (text_faults.py), drawn from their own stream.
    p_empty: float = 0.0
    p_repeat: float = 0.0
    p_wrong_script: float = 0.0
    fault_script: tuple[str, ...] = ()  # faults for the first requests, in order, before rates
    auth_fail_after: int | None = None
    ledger_path: Path | None = None
    seed: int = 0
    engine: str = "default"
    fhir_answer: str = "resource"
    legacy_response_tag: bool = False
    tamper_responses: bool = False
    # Serve https:// with this PEM certificate chain and key (both or neither).
    tls_cert_path: Path | None = None
    tls_key_path: Path | None = None
    # Throttling by load (devserver/capacity.py): 429 + Retry-After on arrival when
    # `capacity` requests are already in flight, or when the bucket of `rate` req/s is empty.
    capacity: int | None = None
    rate: float | None = None

    def __post_init__(self) -> None:
        problems = _range_problems(self) + _choice_problems(self) + _key_and_tls_problems(self)
        if problems:
            raise ConfigError("devserver: " + "; ".join(problems))

    @property
    def fault_rates(self) -> dict[str, float]:
        """Probability of each injected fault per request, in draw order."""
        return {name: getattr(self, f"rate_{name}") for name in FAULT_NAMES if name != "ok"}


def _range_problems(config: DevServerConfig) -> list[str]:
    problems = []
    for name, rate in config.fault_rates.items():
        if not 0.0 <= rate <= 1.0:
            problems.append(f"--rate-{name} must be between 0 and 1 (got {rate})")
    if sum(config.fault_rates.values()) > 1.0 + 1e-9:
        problems.append("the fault rates add up to more than 1")
    problems += text_fault_problems(config.p_empty, config.p_repeat, config.p_wrong_script)
    if not 0 <= config.port <= 65_535:
        problems.append(f"--port must be between 0 and 65535 (got {config.port})")
    checks = {
        "--max-bytes must be positive": config.max_bytes < 1,
        "--latency-ms must not be negative": config.latency_ms < 0,
        "--retry-after-s must not be negative": config.retry_after_s < 0,
        "--slow-s must not be negative": config.slow_s < 0,
        "--token-ttl-s must be positive": config.token_ttl_s <= 0,
        "--auth-fail-after must not be negative": (config.auth_fail_after or 0) < 0,
        "--token must not be empty": config.token == "",
        "--capacity must be at least 1": config.capacity is not None and config.capacity < 1,
        "--rate must be positive": config.rate is not None and config.rate <= 0,
    }
    return problems + [message for message, failed in checks.items() if failed]


def _choice_problems(config: DevServerConfig) -> list[str]:
    problems = []
    unknown = [name for name in config.fault_script if name not in FAULT_NAMES]
    if unknown:
        problems.append(f"--fault-script names unknown faults {unknown} (use {FAULT_NAMES})")
    if config.engine not in ENGINE_NAMES:
        problems.append(f"--engine must be one of {ENGINE_NAMES} (got {config.engine!r})")
    if config.fhir_answer not in FHIR_ANSWERS:
        problems.append(f"--fhir-answer must be one of {FHIR_ANSWERS} (got {config.fhir_answer!r})")
    return problems


def _key_and_tls_problems(config: DevServerConfig) -> list[str]:
    problems = []
    if config.jwe_key is not None:
        try:
            jwe.derive_key(config.jwe_key, kid=config.jwe_kid)
        except EncryptionError:
            # Lengths only: the key itself never reaches a message.
            size = len(config.jwe_key.encode("utf-8"))
            problems.append(
                "--jwe-key (MEDASR_DEVSERVER_JWE_KEY) must be a 16-character (16-byte UTF-8) "
                f"string (got {len(config.jwe_key)} characters, {size} bytes)"
            )
    if (config.tls_cert_path is None) != (config.tls_key_path is None):
        problems.append("a TLS certificate and its key must be given together")
    return problems
