"""Delivery targets: what `--to` / MEDASR_DELIVERY__TARGET names, and what sends to one.

    docs                        the service's document upload (POST /mr/api/v2/docs)
    mllp://HOST:PORT            HL7 v2.5.1 MDM over MLLP; mllps:// over TLS
    fhir+http(s)://HOST/PATH    a FHIR R4 server's base URL (conditional create)

Clear text (`mllp://`, `fhir+http://`) goes only to a loopback host unless
MEDASR_ALLOW_INSECURE_HTTP=true, as for the service. A target's `name` is its canonical
spelling: the same for every spelling of one target (scheme and host in lower case, an
IP address in its one standard form, 127.1 as 127.0.0.1, no default port), and the
ledger's key for it. A DNS name for an address already delivered to is another matter:
tasks/delivery/target_aliases.py refuses it unless the operator says it is new.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import string
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol
from urllib.parse import urlsplit

from service.status import is_loopback_address, resolved_addresses
from storage.records import ItemRecord
from tasks.delivery.errors import TargetInvalid
from tasks.delivery.fhir_documents import Note

_DEFAULT_PORTS = {"http": 80, "https": 443}
_EXAMPLES = "docs, mllp://HOST:PORT, mllps://HOST:PORT or fhir+https://HOST/PATH"


class TargetKind(StrEnum):
    """The three ways a transcript reaches the patient record."""

    DOCS = "docs"
    MLLP = "mllp"
    FHIR = "fhir"


@dataclass(frozen=True)
class Target:
    """One parsed target."""

    kind: TargetKind
    name: str  # canonical: docs | mllp://host:port | mllps://host:port | fhir+https://host/path
    host: str = ""
    port: int = 0
    tls: bool = False
    base_url: str = ""  # FHIR: the http(s) base URL, no trailing slash


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_USERINFO = re.compile(r"//[^/?#]*@")  # user[:password]@ of an address as spelled


def parse_target(text: str, *, allow_insecure: bool = False) -> Target:
    """The target `text` names; raises TargetInvalid (a ConfigError: exit 2)."""
    spelled = text.strip()
    if spelled.lower() in ("", "docs"):
        return Target(TargetKind.DOCS, "docs")
    shown = _USERINFO.sub("//", spelled)[:80]  # a message never repeats a password
    try:
        parts = urlsplit(spelled)
    except ValueError as exc:
        raise TargetInvalid(f"delivery target {shown!r} is not a URL; use {_EXAMPLES}") from exc
    if "@" in parts.netloc:
        raise TargetInvalid(
            f"delivery target {shown!r} carries a user name or password: medasr sends none "
            "from an address (a FHIR server's token is MEDASR_FHIR_TOKEN); remove them"
        )
    try:
        port = parts.port
        if port == 0:  # not "no port": read so, fhir+http://host:0 would go to port 80
            raise ValueError("port 0")
    except ValueError as exc:  # out of range, 0, or not digits
        raise TargetInvalid(
            f"delivery target {shown!r}: its port is not one from 1 to 65535"
        ) from exc
    scheme, host = parts.scheme.lower(), canonical_host(parts.hostname or "")
    if not host:
        raise TargetInvalid(f"delivery target {shown!r} has no host; use {_EXAMPLES}")
    if scheme in ("mllp", "mllps"):
        target = _mllp_target(scheme, host, port, path=parts.path)
    elif scheme in ("fhir+http", "fhir+https"):
        target = _fhir_target(scheme, host, port, path=parts.path)
    else:
        raise TargetInvalid(f"delivery target scheme {scheme[:20]!r} is unknown; use {_EXAMPLES}")
    _refuse_clear_text(target, scheme=scheme, allow_insecure=allow_insecure)
    return target


def _refuse_clear_text(target: Target, *, scheme: str, allow_insecure: bool) -> None:
    """Raise TargetInvalid for clear text to another host without the explicit permission."""
    if target.tls or allow_insecure or _is_loopback(target.host):
        return
    raise TargetInvalid(
        f"refusing to send transcripts in clear text to {target.host} ({scheme}://); use "
        f"{'mllps' if target.kind is TargetKind.MLLP else 'fhir+https'}:// or set "
        "MEDASR_ALLOW_INSECURE_HTTP=true"
    )


def _is_loopback(host: str) -> bool:
    """Judged by address, as for the service: a name counts only if it resolves to loopback."""
    addresses = resolved_addresses(host)
    return bool(addresses) and all(is_loopback_address(a) for a in addresses)


def canonical_host(host: str) -> str:
    """`host` in lower case; an IP address in its standard form (127.1 -> 127.0.0.1)."""
    bare = host.strip("[]").lower()
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        pass
    else:  # ::ffff:127.0.0.1 is 127.0.0.1 (RFC 4291 2.5.5.2)
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        return str(mapped or address)
    if bare and all(c in "0123456789abcdefx." for c in bare) and bare[0].isdigit():
        try:  # the shorthand forms every resolver reads: 127.1, 0x7f.1, 2130706433
            return socket.inet_ntoa(socket.inet_aton(bare))
        except OSError:
            pass
    return bare


def canonical_path(path: str) -> str:
    """A URL path as the URL standard compares it: percent-encoded unreserved characters
    decoded (`%66hir` is `fhir`), other escapes in upper case, dot segments removed
    (`/./fhir`, `/r4/../fhir`; `%2e` is a dot too), RFC 3986 5.2.4."""
    decoded = _ESCAPE.sub(_unescaped, path)
    kept: list[str] = []
    for segment in decoded.split("/")[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    last = decoded.rsplit("/", 1)[-1]
    tail = "/" if last in (".", "..") and kept else ""
    return ("/" + "/".join(kept) + tail) if decoded.startswith("/") else decoded


def _unescaped(found: re.Match[str]) -> str:
    char = chr(int(found.group(1), 16))
    return char if char in _UNRESERVED else found.group(0).upper()


def _shown_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _mllp_target(scheme: str, host: str, port: int | None, *, path: str) -> Target:
    if port is None or not 0 < port < 65536:
        raise TargetInvalid(
            f"{scheme}:// needs a port between 1 and 65535, e.g. {scheme}://{host}:2575"
        )
    if path not in ("", "/"):
        raise TargetInvalid(f"{scheme}:// takes no path (got {path[:40]!r})")
    name = f"{scheme}://{_shown_host(host)}:{port}"
    return Target(TargetKind.MLLP, name, host=host, port=port, tls=scheme == "mllps")


def _fhir_target(scheme: str, host: str, port: int | None, *, path: str) -> Target:
    http = scheme.removeprefix("fhir+")
    if port == _DEFAULT_PORTS[http]:
        port = None
    where = _shown_host(host) + (f":{port}" if port else "")
    base = f"{http}://{where}{canonical_path(path).rstrip('/')}"
    return Target(
        TargetKind.FHIR,
        f"fhir+{base}",
        host=host,
        port=port or 0,
        tls=http == "https",
        base_url=base,
    )


@dataclass(frozen=True)
class Outgoing:
    """One transcript version for one target, as the pipeline hands it to a sender."""

    delivery_id: int
    item: ItemRecord = field(repr=False)
    note: Note = field(repr=False)
    replaced_remote_id: str | None = None  # what the target returned for the replaced version
    control_id: str = ""  # MSH-10 of the row's attempt series (identity.py)


@dataclass(frozen=True)
class Sent:
    """A target's receipt: every field kept, the target's own id, the cost."""

    fields: dict[str, Any]
    remote_id: str | None
    attempts: int
    request_bytes: int


class Sender(Protocol):
    """Sends documents to one target; one per deliverer, shared by its concurrent sends.

    `dedupes` is true where a resend of an unanswered document cannot file it twice
    (MLLP with the same MSH-10, FHIR conditional create), so the pipeline may resend an
    in-doubt row by itself; elsewhere an in-doubt row waits for an operator.
    """

    target: Target
    dedupes: bool
    format_name: str  # the row's `format`: txt or fhir (docs), mdm (MLLP), fhir (FHIR REST)

    async def send(self, outgoing: Outgoing) -> Sent:
        """File one document; raises a MedasrError (DeliveryInDoubt when it may be filed)."""
        ...

    async def aclose(self) -> None:
        """Close connections."""
        ...
