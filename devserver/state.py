"""What one running devserver remembers, shared by every route: ledger, tokens, faults, engine."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from devserver.capacity import CapacityGuard
from devserver.config import DevServerConfig
from devserver.engines import Engine, make_engine
from devserver.faults import FaultInjector
from devserver.fhir_store import FhirStore
from devserver.ledger import Ledger, open_ledger
from devserver.received import ReceivedDocuments
from devserver.text_faults import TextFaults
from devserver.tokens import TokenAuthority
from service import jwe


@dataclass
class DevServerState:
    """Everything one running devserver remembers."""

    config: DevServerConfig
    ledger: Ledger
    tokens: TokenAuthority
    faults: FaultInjector
    engine: Engine
    key: jwe.JweKey | None
    text_faults: TextFaults
    capacity: CapacityGuard
    txn_numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    fhir: FhirStore = field(default_factory=FhirStore)  # /fhir/DocumentReference resources
    received: ReceivedDocuments = field(default_factory=ReceivedDocuments)  # GET /received


def build_state(config: DevServerConfig) -> DevServerState:
    """Fresh state for `config`; raises ConfigError or EncryptionError for bad options."""
    key = None
    if config.jwe_key is not None:
        key = jwe.derive_key(config.jwe_key, kid=config.jwe_kid)
    return DevServerState(
        config=config,
        ledger=open_ledger(config.ledger_path),
        tokens=TokenAuthority(static_token=config.token, ttl_s=config.token_ttl_s),
        faults=FaultInjector(config),
        engine=make_engine(config.engine),
        key=key,
        text_faults=TextFaults(
            p_empty=config.p_empty,
            p_repeat=config.p_repeat,
            p_wrong_script=config.p_wrong_script,
            seed=config.seed,
        ),
        capacity=CapacityGuard(capacity=config.capacity, rate_per_s=config.rate),
    )
