"""The MLLP client against a real listener on loopback (python-hl7's asyncio server)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections import deque
from pathlib import Path

import pytest

from service.mllp import MllpClient, MllpEndpoint, MllpNoAnswer, MllpTimings, MllpUnreachable
from tests.service.mllp_listener import MllpListener, running_listener
from tests.service.tls_certs import TlsFiles, make_tls_files

FAST = MllpTimings(
    ack_timeout_s=0.3, connect_timeout_s=2, connect_attempts=2, backoff_initial_s=0.01
)


def _message(control_id: str) -> bytes:
    return (
        "MSH|^~\\&|MEDASR|DICT|EHR|HOSP|20260501||MDM^T02^MDM_T02|"
        f"{control_id}|P|2.5.1\rEVN|T02|20260501\rPID|1||P1\rPV1|1|U\r"
        "TXA|1|TN|TX|20260501||||||||D1||||DO||AV\rOBX|1|TX|11506-3^^LN||text||||||F"
    ).encode()


async def _exchange_all(client: MllpClient, ids: list[str]) -> list[bytes | str]:
    answers: list[bytes | str] = []
    for control_id in ids:
        try:
            answers.append(await client.exchange(_message(control_id)))
        except MllpNoAnswer as exc:
            answers.append(type(exc).__name__)
    await client.aclose()
    return answers


def test_messages_go_one_at_a_time_on_one_connection_and_each_gets_its_ack() -> None:
    with running_listener() as listener:
        client = MllpClient(MllpEndpoint("127.0.0.1", listener.port), timings=FAST)
        answers = asyncio.run(_exchange_all(client, ["C1", "C2", "C3"]))
    assert [r.control_id for r in listener.received] == ["C1", "C2", "C3"]
    assert all(isinstance(a, bytes) and b"MSA|AA|C" in a for a in answers)
    assert listener.connections == 1
    assert client.connections == 1


def test_no_answer_and_a_dropped_connection_are_told_apart_and_the_link_reopens() -> None:
    with running_listener(MllpListener(script=deque(["none", "drop", "AA"]))) as listener:
        client = MllpClient(MllpEndpoint("127.0.0.1", listener.port), timings=FAST)
        answers = asyncio.run(_exchange_all(client, ["C1", "C2", "C3"]))
    assert answers[:2] == ["MllpNoAnswer", "MllpNoAnswer"]
    assert isinstance(answers[2], bytes)
    assert b"MSA|AA|C3" in answers[2]
    # After each missing answer the connection is closed: a late ACK cannot be misread.
    assert listener.connections == 3
    assert [r.answer for r in listener.received] == ["none", "drop", "AA"]


def test_concurrent_callers_share_the_connection_one_message_at_a_time() -> None:
    async def run(port: int) -> list[bytes]:
        client = MllpClient(MllpEndpoint("127.0.0.1", port), timings=FAST)
        answers = await asyncio.gather(*(client.exchange(_message(f"C{i}")) for i in range(8)))
        await client.aclose()
        return list(answers)

    with running_listener() as listener:
        answers = asyncio.run(run(listener.port))
    for index, answer in enumerate(answers):
        assert f"MSA|AA|C{index}".encode() in answer
    assert listener.connections == 1
    assert len(listener.received) == 8


def test_a_closed_port_is_unreachable_after_the_backoff_and_nothing_was_sent() -> None:
    with running_listener() as listener:
        port = listener.port
    client = MllpClient(MllpEndpoint("127.0.0.1", port), timings=FAST)
    # Refused at once (the error names the refusal), not a connect timeout waited out.
    with pytest.raises(MllpUnreachable, match=r"2 attempt\(s\) \(ConnectionRefusedError\)"):
        asyncio.run(client.exchange(_message("C1")))


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("mllps"))


def _server_context(files: TlsFiles) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.server_cert, files.server_key)
    return context


def test_mllps_talks_tls_with_the_ca_bundle(tls_files: TlsFiles) -> None:
    with running_listener(tls=_server_context(tls_files)) as listener:
        endpoint = MllpEndpoint("127.0.0.1", listener.port, tls=True)
        client = MllpClient(endpoint, timings=FAST, ca_bundle=tls_files.ca_cert)
        answers = asyncio.run(_exchange_all(client, ["T1"]))
    assert isinstance(answers[0], bytes)
    assert b"MSA|AA|T1" in answers[0]
    assert listener.received[0].control_id == "T1"


def test_mllps_refuses_a_certificate_the_bundle_does_not_sign(
    tls_files: TlsFiles, tmp_path: Path
) -> None:
    other = make_tls_files(tmp_path)
    with running_listener(tls=_server_context(other)) as listener:
        endpoint = MllpEndpoint("127.0.0.1", listener.port, tls=True)
        client = MllpClient(endpoint, timings=FAST, ca_bundle=tls_files.ca_cert)
        with pytest.raises(MllpUnreachable, match="MEDASR_CA_BUNDLE"):
            asyncio.run(client.exchange(_message("T1")))
    assert listener.received == []


def test_an_engine_that_stops_reading_costs_the_ack_timeout_not_a_hang() -> None:
    # A stuck engine holds the connection open and reads nothing: what the kernel cannot
    # take stays in our buffer, and a polite close would wait for it to drain forever.
    stop = threading.Event()
    held: list[socket.socket] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)

    def accept_and_never_read() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept_and_never_read, daemon=True)
    thread.start()
    client = MllpClient(MllpEndpoint("127.0.0.1", server.getsockname()[1]), timings=FAST)

    async def run() -> None:
        async with asyncio.timeout(60):  # the guard against the hang this test is about
            try:
                await client.exchange(b"x" * 32_000_000)  # far past any socket buffer
            finally:
                await client.aclose()

    try:
        with pytest.raises(MllpNoAnswer, match="no ACK"):
            asyncio.run(run())
    finally:
        stop.set()
        thread.join(10)
        for connection in held:
            connection.close()
        server.close()
