"""Request bodies over the size limit, and bodies that stall: answered (413, 408) on a
connection then closed cleanly, nothing stored."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from .conftest import start_service

TIMEOUT = 1.0


def exchange(port: int, head: bytes, body: bytes, pause: float = 0.0) -> tuple[bytes, float]:
    """Send ``head`` and ``body`` (from another thread, as a client that sends its whole
    body before reading, after ``pause`` seconds), then read until the server closes; the
    bytes received and the seconds until the close. A reset raises ConnectionResetError."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head)

        def send() -> None:
            time.sleep(pause)
            with contextlib.suppress(OSError):  # the server closed first: the reader sees it
                connection.sendall(body)

        sender = threading.Thread(target=send)
        sender.start()
        start, received = time.monotonic(), b""
        while chunk := connection.recv(65536):
            received += chunk
        seconds = time.monotonic() - start
        sender.join()
    return received, seconds


def request_head(path: str, key: str, length: int) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {key}\r\n"
            f"content-type: application/json\r\ncontent-length: {length}\r\n\r\n").encode()


@pytest.fixture(scope="module", params=("sqlite", "postgresql"))
def short_timeout_service(request, tmp_path_factory):
    db = "service.db"
    if request.param == "postgresql":
        db = request.getfixturevalue("postgres_server").new_database()
    running = start_service(tmp_path_factory.mktemp("bodies"), db,
                            server={"body_timeout_seconds": TIMEOUT,
                                    "max_body_bytes": 100_000})
    yield running
    running.stop()


def test_oversized_body_gets_413_naming_the_limit_and_a_clean_close(short_timeout_service):
    service = short_timeout_service
    before = service.storage().counts()
    big = b'{"context": [' + b"0," * 5_000_000 + b"0]}"  # 10 MB
    port = service.process.port
    for head in (request_head("/v1/decide", service.client_key, len(big)),
                 # no content-length: chunked, refused once the limit is passed
                 (f"POST /v1/decide HTTP/1.1\r\nhost: x\r\nauthorization: Bearer "
                  f"{service.client_key}\r\ntransfer-encoding: chunked\r\n\r\n").encode()):
        body = big if b"content-length" in head else (
            b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n"
                     for c in (big[i:i + 65536] for i in range(0, len(big), 65536)))
            + b"0\r\n\r\n")
        received, _ = exchange(port, head, body)
        assert received.startswith(b"HTTP/1.1 413 "), received[:200]
        assert b"connection: close" in received.lower()
        assert b"limit of 100000 bytes" in received and b'"field": "body"' in received
    with service.http() as http:  # a client library sees the answer too
        answer = http.post("/v1/decide", content=big)
        assert answer.status_code == 413 and "100000" in answer.json()["error"]
        assert http.post("/v1/feedback", content=big).status_code == 413
    assert service.storage().counts() == before


def test_stalled_body_is_dropped_after_the_timeout(short_timeout_service):
    service = short_timeout_service
    before = service.storage().counts()
    body = b'{"context": [0.1, 0.2, 0.3, 0.4]}'
    head = request_head("/v1/decide", service.client_key, len(body))
    # half the body, then nothing: answered 408 and closed after about the timeout
    received, seconds = exchange(service.process.port, head + body[:10], b"", pause=0)
    assert received.startswith(b"HTTP/1.1 408 "), received[:200]
    assert b"body_timeout_seconds" in received
    assert TIMEOUT * 0.9 <= seconds <= TIMEOUT + 5
    # a body that arrives slowly but within the timeout is served
    received, _ = exchange(service.process.port,
                           head.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nconnection: close\r\n"),
                           body, pause=TIMEOUT / 4)
    assert received.startswith(b"HTTP/1.1 200 "), received[:200]
    after = service.storage().counts()
    assert after.decisions == before.decisions + 1


def test_a_client_waiting_for_100_continue_gets_413_before_sending_its_body(
        short_timeout_service):
    """A client that sends ``Expect: 100-continue`` (curl does for a body above 1 MB) and
    declares a length above the limit is answered 413 at once and the connection closed:
    it is not told to continue and so never sends the body (nor waits the body's timeout
    for the answer). One within the limit is told to continue and served."""
    service = short_timeout_service
    before = service.storage().counts()
    port = service.process.port
    for path, key, length in (("/v1/decide", service.client_key, 10_000_000),
                              ("/v1/model", service.admin_key, 1_000_000_000)):
        head = request_head(path, key, length).replace(
            b"\r\n\r\n", b"\r\nexpect: 100-continue\r\n\r\n")
        if path == "/v1/model":
            head = b"PUT" + head[len(b"POST"):]
        received, _ = exchange(port, head, b"")  # the body is never sent
        assert received.startswith(b"HTTP/1.1 413 "), received[:300]
        assert b"100 Continue" not in received and b"connection: close" in received.lower()
        assert b'"field": "body"' in received
    body = b'{"context": [0.1, 0.2, 0.3, 0.4]}'
    head = request_head("/v1/decide", service.client_key, len(body)).replace(
        b"\r\n\r\n", b"\r\nexpect: 100-continue\r\nconnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head)
        assert connection.recv(65536).startswith(b"HTTP/1.1 100 Continue")
        connection.sendall(body)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200 "), received[:300]
    assert service.storage().counts().decisions == before.decisions + 1


@pytest.fixture(scope="module")
def short_head_service(tmp_path_factory):
    running = start_service(tmp_path_factory.mktemp("heads"),
                            server={"header_timeout_seconds": TIMEOUT,
                                    "max_header_bytes": 8192, "log_format": "json"})
    yield running
    running.stop()


def test_a_head_that_stalls_or_never_comes_is_cut_off_after_the_timeout(short_head_service):
    port = short_head_service.process.port
    # a header line every TIMEOUT / 2 s (a slow client, or one holding connections): 408
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        start = time.monotonic()
        connection.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        received = b""
        for i in range(20):
            time.sleep(TIMEOUT / 2)
            try:
                connection.sendall(f"x-slow-{i}: 1\r\n".encode())
            except OSError:  # closed by the server
                break
        while chunk := connection.recv(65536):
            received += chunk
        seconds = time.monotonic() - start
    assert received.startswith(b"HTTP/1.1 408 "), received[:300]
    assert b"application/json" in received and b"header_timeout_seconds" in received
    assert TIMEOUT * 0.9 <= seconds <= TIMEOUT + 5
    # a connection that sends nothing is closed, with nothing to answer
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        start = time.monotonic()
        assert connection.recv(65536) == b""
        assert TIMEOUT * 0.9 <= time.monotonic() - start <= TIMEOUT + 5


def test_a_head_over_the_limit_gets_431_and_a_malformed_request_400_in_json(short_head_service):
    port = short_head_service.process.port
    big = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 1_000_000 + b"\r\n\r\n"
    received, _ = exchange(port, big[:100], big[100:])
    assert received.startswith(b"HTTP/1.1 431 "), received[:300]
    assert b"max_header_bytes" in received and b"connection: close" in received
    received, _ = exchange(port, b"POST /v1/noop HTTP/1.1\r\ncontent-length: -5\r\n\r\n", b"")
    assert received.startswith(b"HTTP/1.1 400 "), received[:300]
    assert received.split(b"\r\n\r\n", 1)[1].startswith(b'{"error": "not an HTTP request')
    # a head within the limit is served as ever
    with short_head_service.http(None) as anyone:
        assert anyone.get("/healthz", headers={"x-some": "a" * 4000}).status_code == 200
    # the server's own warning is a line of the JSON log, as every line there
    lines = short_head_service.process.log.read_text().splitlines()
    assert lines and all(line.startswith("{") for line in lines), lines
    assert any('"event": "server"' in line and "Invalid HTTP request" in line
               for line in lines), lines


def sized_head(size: int) -> bytes:
    """A GET /healthz head of exactly ``size`` bytes (padded by one header's value)."""
    start, end = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\nx-big: ", b"\r\n\r\n"
    return start + b"a" * (size - len(start) - len(end)) + end


@pytest.mark.parametrize("reads", [1, 3])
def test_the_head_limit_holds_whether_the_head_arrives_in_one_read_or_several(
        short_head_service, reads):
    port, limit = short_head_service.process.port, 8192
    for size, status in ((limit, b"200"), (limit + 1, b"431"), (2 * limit, b"431")):
        head = sized_head(size)
        with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
            for i in range(reads):  # each part a read of its own
                connection.sendall(head[i * len(head) // reads:(i + 1) * len(head) // reads])
                time.sleep(0.05 if i < reads - 1 else 0)
            received = b""
            while chunk := connection.recv(65536):
                received += chunk
        assert received.startswith(b"HTTP/1.1 " + status), (size, reads, received[:300])
        if status == b"431":
            assert b'"error"' in received and b"max_header_bytes" in received
    # a head within the limit and its body in one read: only the head counts
    body = b'{"context": [0.1, 0.2, 0.3, 0.4]' + b" " * 20000 + b"}"
    head = (f"POST /v1/noop HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer "
            f"{short_head_service.client_key}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode()
    received, _ = exchange(port, head + body, b"")
    assert received.startswith(b"HTTP/1.1 200 "), received[:300]


def test_a_refused_head_that_was_sent_whole_is_closed_soon_not_after_the_timeout(service):
    """A client that sent its whole oversized head and waits for the close gets the 431 and
    the close within about DRAIN_QUIET, not the head's timeout (10 s by default), during
    which the connection was held open for nothing."""
    from iglearn.service.http import DRAIN_QUIET

    port = service.process.port
    big = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * 100_000 + b"\r\n\r\n"
    received, seconds = exchange(port, big, b"")
    assert received.startswith(b"HTTP/1.1 431 "), received[:300]
    assert seconds < DRAIN_QUIET + 3 < 10
