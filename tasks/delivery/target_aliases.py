"""One receiver, one ledger: a new spelling of an address already delivered to is refused.

A target's canonical name (targets.py) already folds case, IP address forms and default
ports. A DNS name is another spelling only the resolver can see: `localhost` for
127.0.0.1, a host's name for its address. Filing every document again because the
operator spelt the engine differently is the failure this prevents: a target medasr has
never delivered to whose address (and port, and path) is one it has delivered to is
refused (TargetAlias, exit 2) naming the earlier spelling, unless the operator says it
is a different receiver (`--new-target`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from service.status import resolved_addresses
from tasks.delivery.errors import TargetAlias, TargetInvalid
from tasks.delivery.targets import Target, TargetKind, parse_target

# A target with rows in these states may hold documents: its spelling is taken.
SEEN_STATUSES = frozenset({"delivered", "in_doubt"})


def check_target_alias(target: Target, *, known: Iterable[str], new_target: bool) -> Target:
    """`target`, or the known target it spells differently (same canonical name);
    raises TargetAlias for a new name that resolves to a known target's address."""
    names = sorted(set(known))
    if target.kind is TargetKind.DOCS or target.name in names:
        return target
    earlier = [(n, t) for n, t in ((n, _parsed(n)) for n in names) if t is not None]
    for spelt, other in earlier:
        if other.kind is target.kind and other.name == target.name:
            return replace(target, name=spelt)  # the ledger knows it by an older spelling
    if new_target:
        return target
    addresses = resolved_addresses(target.host)
    for spelt, other in earlier:
        if _same_place(target, other) and addresses & resolved_addresses(other.host):
            raise TargetAlias(
                f"{target.name} is the address of {spelt}, which medasr has delivered "
                f"to: use --to {spelt}, or --new-target if it is another receiver"
            )
    return target


def _parsed(name: str) -> Target | None:
    """A ledger's target name as it parses today (canonical)."""
    try:
        return parse_target(name, allow_insecure=True)
    except TargetInvalid:
        return None


def _same_place(one: Target, other: Target) -> bool:
    """Same kind, port, TLS and (FHIR) path: only the host is spelt differently."""
    if (one.kind, one.port, one.tls) != (other.kind, other.port, other.tls):
        return False
    return _path(one) == _path(other)


def _path(target: Target) -> str:
    return target.base_url.split("://", 1)[-1].partition("/")[2]


def seen_targets(uow: Any) -> list[str]:
    """Targets the store has delivered to (or may have: in doubt)."""
    counts = uow.deliveries.delivery_counts_by_target()
    return [c.target for c in counts if c.status in SEEN_STATUSES and c.target]
