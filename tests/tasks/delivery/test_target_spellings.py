"""A target's identity survives an IPv4-mapped IPv6 address and the URL standard's path
spellings (dot segments, percent-encoded unreserved characters): the same receiver is
never filed to again as if it were another.

Real parts: python-hl7's MLLP listener (the engine files each MSH-10 once).
"""

from __future__ import annotations

import pytest

from storage.interface import UnitOfWorkFactory
from tasks.delivery.targets import parse_target
from tests.service.mllp_listener import MllpListener, running_listener
from tests.tasks.delivery.delivery_helpers import deliver, make_done, target_settings


@pytest.mark.parametrize(
    ("spelled", "canonical"),
    [
        ("mllp://[::ffff:127.0.0.1]:2575", "mllp://127.0.0.1:2575"),
        ("mllp://[::FFFF:7f00:1]:2575", "mllp://127.0.0.1:2575"),
        ("fhir+http://127.0.0.1/./fhir", "fhir+http://127.0.0.1/fhir"),
        ("fhir+http://127.0.0.1/%66hir", "fhir+http://127.0.0.1/fhir"),
        ("fhir+http://127.0.0.1/r4/../fhir/", "fhir+http://127.0.0.1/fhir"),
        ("fhir+http://127.0.0.1/%2e/fhir", "fhir+http://127.0.0.1/fhir"),
        ("fhir+http://[::ffff:127.0.0.1]/fhir", "fhir+http://127.0.0.1/fhir"),
        ("fhir+http://127.0.0.1/a%2fb", "fhir+http://127.0.0.1/a%2Fb"),  # reserved: kept
    ],
)
def test_spellings_of_one_receiver_are_one_target(spelled: str, canonical: str) -> None:
    assert parse_target(spelled).name == canonical


def test_an_ipv4_mapped_address_files_nothing_again(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    texts = {f"/d/{n}.wav": f"note {n}" for n in range(3)}
    meta = {uri: {"patient_id": f"PAT-{n}"} for n, uri in enumerate(texts)}
    make_done(store, texts, metadata=meta)
    server = devserver_factory()
    with running_listener(MllpListener()) as listener:
        first = target_settings(server, sqlite_url, target=f"mllp://127.0.0.1:{listener.port}")
        assert deliver(first, store).delivered == 3
        mapped = f"mllp://[::ffff:127.0.0.1]:{listener.port}"
        again = deliver(target_settings(server, sqlite_url, target=mapped), store)
    assert (again.delivered, len(listener.received)) == (0, 3)
