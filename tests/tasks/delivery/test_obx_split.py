"""A line longer than OBX-5 may carry (TX: 65,536 characters) goes in consecutive OBX.

Each OBX has its own set ID (OBX-1); the pieces of one line share OBX-4 (the sub-ID),
so a receiver joins them back as they came and starts a new line at a new sub-ID. The
limit is counted on the wire, escapes included. Real parts: python-hl7's MLLP listener.
"""

from __future__ import annotations

from pydantic import SecretStr

from config.settings import DeliverySettings
from storage.interface import UnitOfWorkFactory
from tasks.delivery.mdm import OBX_TX_MAX_CHARS
from tests.service.mllp_listener import running_listener
from tests.tasks.delivery.delivery_helpers import deliver, delivery_settings, make_done

TX_LIMIT = 65_536  # HL7 v2.5.1 TX, the value type of every OBX here
LONG_ESCAPED = "dose|route^site&note~x\\y\x0b" * 6_000  # 150,000 characters, escapes add more
LONG_PLAIN = "मरीज़ को बुखार है। " * 4_000  # 76,000 characters of Devanagari
TEXT = f"{LONG_ESCAPED}\nshort line\n{LONG_PLAIN}\n\nlast"


def test_a_long_line_is_cut_across_obx_segments_and_joined_back_exactly(
    devserver_factory, store: UnitOfWorkFactory, sqlite_url: str
) -> None:
    uri = "/d/long.wav"
    with running_listener() as listener:
        make_done(store, {uri: TEXT}, metadata={uri: {"patient_id": "MRN-1"}})
        settings = delivery_settings(devserver_factory(), sqlite_url)
        delivery = DeliverySettings(
            target=f"mllp://127.0.0.1:{listener.port}",
            hl7_ack_timeout_s=5.0,
            fhir_token=SecretStr("unused"),
        )
        stats = deliver(settings.model_copy(update={"delivery": delivery}), store)
    assert stats.delivered == 1
    (received,) = listener.received
    segments = list(received.message.segments("OBX"))
    assert max(len(str(segment[5])) for segment in segments) <= TX_LIMIT  # as on the wire
    assert len(segments) > len(TEXT.split("\n"))  # some line was cut
    assert [str(segment[1]) for segment in segments] == [
        str(n) for n in range(1, len(segments) + 1)
    ]
    assert received.text() == TEXT
    assert OBX_TX_MAX_CHARS == TX_LIMIT
