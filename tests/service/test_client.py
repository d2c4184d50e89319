"""The Python client: decisions and feedback, and retries that stay idempotent when an
answer is lost after the service stored the request."""

from __future__ import annotations

import socket
import threading

import httpx
import numpy as np
import pytest

from iglearn.client import Client, ServiceError
from iglearn.errors import IGLearnError
from iglearn.service.process import free_port

from .conftest import D_X, D_Y


def message(sock: socket.socket) -> bytes:
    """One whole HTTP/1.1 message (head and Content-Length body) from ``sock``; b"" at the
    end of the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    while len(body) < length:
        body += sock.recv(1 << 16)
    return head + b"\r\n\r\n" + body


class LosingProxy:
    """A TCP proxy to the service that, ``drop`` times, forwards a request and its answer's
    arrival but closes the caller's connection instead of passing the answer on."""

    def __init__(self, upstream: int):
        self.upstream, self.drop, self.dropped = upstream, 0, 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self) -> None:
        while True:
            try:
                caller, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(caller,), daemon=True).start()

    def relay(self, caller: socket.socket) -> None:
        with caller, socket.create_connection(("127.0.0.1", self.upstream)) as service:
            caller.settimeout(30)
            service.settimeout(30)
            while True:
                request = message(caller)
                if not request:
                    return
                service.sendall(request)
                answer = message(service)
                if self.drop > 0:
                    self.drop -= 1
                    self.dropped += 1
                    return                     # the answer is lost with the connection
                caller.sendall(answer)

    def close(self) -> None:
        self.server.close()


def test_retries_after_a_lost_answer_are_idempotent(service):
    proxy = LosingProxy(service.process.port)
    try:
        with Client(f"http://127.0.0.1:{proxy.port}", service.client_key, backoff=0.01) as client:
            proxy.drop = 1
            decision = client.decide(np.ones(D_X))
            assert proxy.dropped == 1
            storage = service.storage()
            stored = storage._decision(decision["event_id"])
            assert stored.action == decision["action"]
            proxy.drop = 1
            assert client.feedback(decision["event_id"], np.zeros(D_Y)) == "stored"
            assert proxy.dropped == 2
            assert decision["event_id"] in storage.joined().event_id
            assert client.feedback(client.decide([0.5] * D_X)["event_id"],
                                   [1, 0, 0]) == "joined"
            with pytest.raises(ServiceError) as error:
                client.decide([1, 2])
            assert error.value.status == 422 and error.value.field == "context"
            batch = client.decide_batch(np.zeros((3, D_X)))
            assert len(batch) == 3 and client.model()["algorithm"] == "igl"
            only = client.decide_batch(np.ones((20, D_X)), actions=[1])  # as decide takes
            assert {d["action"] for d in only} == {1}
            assert client.decide(np.ones(D_X), actions=np.array([2]))["action"] == 2
    finally:
        proxy.close()


def test_gives_up_after_its_retries():
    client = Client(f"http://127.0.0.1:{free_port()}", "iglk_x", retries=2, backoff=0.01)
    with client, pytest.raises(IGLearnError, match=r"/v1/decide: cannot reach the decision "
                                                   r"service after 3 attempts \(ConnectError: "
                                                   r".*check that it is running") as error:
        client.decide([0.0] * D_X)
    assert isinstance(error.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize("value, what", [(float("nan"), "NaN"), (float("inf"), "infinite"),
                                         (-np.inf, "infinite")])
def test_a_value_json_cannot_carry_is_named_before_anything_is_sent(value, what):
    sent = []
    client = Client("http://iglearn.invalid", "iglk_x", retries=0)
    client._http = httpx.Client(base_url="http://iglearn.invalid", transport=httpx.MockTransport(
        lambda request: sent.append(request) or httpx.Response(200, json={})))
    context = np.zeros(D_X)
    context[3] = value
    with client:
        with pytest.raises(IGLearnError, match=rf"^context\[3\] is {what}"):
            client.decide(context)
        with pytest.raises(IGLearnError, match=rf"^contexts\[1\]\[3\] is {what}"):
            client.decide_batch(np.stack([np.zeros(D_X), context]))
        with pytest.raises(IGLearnError, match=rf"^feedback\[3\] is {what}"):
            client.feedback("e1", [0.0, 0.0, 0.0, value])
        with pytest.raises(IGLearnError, match=r"^feedback\[0\] is text \('a'\)"):
            client.feedback("e1", ["a", "b"])
        with pytest.raises(IGLearnError, match=r"^context\[1\] is text \('3'\); the service "
                                               r"takes numbers"):
            client.decide([37.0, "3", 900, 37])  # the service would refuse it: told first
        with pytest.raises(IGLearnError, match=r"^feedback: not a vector of numbers"):
            client.feedback("e1", [[1.0], [2.0, 3.0]])
        with pytest.raises(IGLearnError, match=r"^contexts: one vector \(shape \(4,\)\); "
                                               r"decide_batch takes one context a row"):
            client.decide_batch(np.zeros(D_X))
        assert client.decide(np.zeros(D_X)) == {}   # a finite context is sent
    assert len(sent) == 1


def unreachable() -> Client:
    """A client of a port nothing listens on, without retries: a request that got as far as
    being sent fails with 'cannot reach', so a refusal naming the value was made before."""
    return Client(f"http://127.0.0.1:{free_port()}", "iglk_x", retries=0)


def test_ragged_rows_are_refused_naming_the_row_and_the_length():
    with unreachable() as client:
        with pytest.raises(IGLearnError, match=r"^contexts\[1\] has 2 values but contexts\[0\] "
                                               r"has 4; every row of decide_batch is one "
                                               r"context of the same length: fix or drop row "
                                               r"1$"):
            client.decide_batch([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]])
        with pytest.raises(IGLearnError, match=r"^contexts\[2\] has 5 values but contexts\[0\] "
                                               r"has 4"):
            client.decide_batch([np.zeros(D_X), np.ones(D_X), np.ones(D_X + 1)])
        with pytest.raises(IGLearnError, match=r"^contexts\[1\]: not a vector of numbers "
                                               r"\(contexts\[1\]\[1\] is itself a sequence"):
            client.decide_batch([[1.0, 2.0], [1.0, [2.0, 3.0]]])
        with pytest.raises(IGLearnError, match=r"^contexts: no rows"):
            client.decide_batch([])


def test_none_is_named_as_not_a_number_and_a_row_list_points_at_decide_batch():
    with unreachable() as client:
        with pytest.raises(IGLearnError, match=r"^context\[2\] is None, not a number; the "
                                               r"service takes finite numbers only"):
            client.decide([0.0, 1.0, None, 3.0])
        with pytest.raises(IGLearnError, match=r"^contexts\[0\]\[0\] is None, not a number"):
            client.decide_batch([[None, 1.0, 2.0, 3.0]])
        with pytest.raises(IGLearnError, match=r"^context\[1\] is not a number \(object "):
            client.decide([0.0, object()])
        for row in ([[0.0] * D_X], np.zeros((1, D_X))):  # a list holding one row
            with pytest.raises(IGLearnError, match=r"^context: not a vector of numbers .*; "
                                                   r"decide takes one context, a flat vector "
                                                   r"of numbers: pass the row itself, or call "
                                                   r"decide_batch for rows of contexts$"):
                client.decide(row)


def test_well_formed_rows_of_any_kind_reach_the_service(service):
    import pandas as pd

    with Client(service.url, service.client_key) as client:
        for contexts in ([(1, 2, 3, 4), (4, 3, 2, 1)], [np.ones(D_X), [0.5] * D_X],
                         pd.DataFrame(np.ones((2, D_X)))):
            assert len(client.decide_batch(contexts)) == 2
        assert client.decide(pd.Series([0.0, 1.0, 2.0, 3.0]))["action"] in range(3)


def test_a_refit_waited_for_longer_than_the_clients_timeout_is_answered_once(tmp_path):
    """``refit(wait=S)`` waits up to S seconds for the re-fit's answer whatever the client's
    timeout: with a timeout far shorter than the re-fit it had timed out (and, with retries,
    asked for the re-fit again); now it returns the new model, and one re-fit ran."""
    from .conftest import play, start_service

    running = start_service(tmp_path, learning={"min_interactions": 100000})
    try:
        with running.http() as http:
            play(http, 60, np.random.default_rng(0))
        with Client(running.url, running.admin_key, timeout=0.01, retries=0) as client:
            answer = client.refit(wait=60)
            assert answer["version"] == 1
            assert [m["version"] for m in client.model()["versions"]] == [1]
    finally:
        running.stop()


def test_a_context_by_name_is_sent_as_the_service_reads_it(tmp_path):
    """A mapping of the service's ``[model] context_names`` to numbers, in any order, is
    the decision of the vector in the names' order; a value that is no number is named by its
    name before anything is sent, and a name the service lacks is its 422."""
    from .conftest import start_service

    names = ["age", "temp_c", "ms", "count"]
    running = start_service(tmp_path, model={"context_names": names})
    try:
        with Client(running.url, running.client_key, retries=0) as client:
            vector = [0.5, -1.0, 2.0, 3.0]
            named = dict(reversed(list(zip(names, vector, strict=True))))
            first = client.decide(vector, event_id="v")
            assert client.decide(named, event_id="v") == first   # the same decision, retried
            batch = client.decide_batch([named, np.asarray(vector)], event_ids=["b", "c"])
            assert [d["probabilities"] for d in batch] == [first["probabilities"]] * 2
            with pytest.raises(IGLearnError, match=r"^context\['ms'\] is text \('2'\); the "
                                                   r"service takes numbers"):
                client.decide({**named, "ms": "2"})
            with pytest.raises(IGLearnError, match=r"^contexts\[1\]\['count'\] is NaN"):
                client.decide_batch([named, {**named, "count": float("nan")}])
            with pytest.raises(IGLearnError, match=r"^context: the name 3 is not text"):
                client.decide({**named, 3: 1.0})
            with pytest.raises(ServiceError, match=r"^HTTP 422: unknown context value 'agee'"):
                client.decide({**named, "agee": 1.0})
    finally:
        running.stop()


def test_a_feedback_by_name_is_sent_as_the_service_reads_it(tmp_path):
    from .conftest import start_service

    names = ["dwell_ms", "clicked", "scrolled"]
    running = start_service(tmp_path, model={"feedback_names": names})
    try:
        with Client(running.url, running.client_key, retries=0) as client:
            decision = client.decide([0.0, 0.0, 0.0, 1.0])
            with pytest.raises(IGLearnError, match=r"^feedback\['clicked'\] is None"):
                client.feedback(decision["event_id"], {"dwell_ms": 1.0, "clicked": None,
                                                       "scrolled": 0.0})
            assert client.feedback(decision["event_id"], {"scrolled": 0.0, "clicked": 1.0,
                                                          "dwell_ms": 3400.0}) == "joined"
        stored = running.storage().joined()
        assert stored.feedback.tolist() == [[3400.0, 1.0, 0.0]]
    finally:
        running.stop()


def test_a_fractional_action_or_a_complex_value_is_refused_naming_it(service):
    """An action index that is no whole number is refused naming it (1.7 was sent as action
    1), while 2.0 and numpy's integers are the indices they equal; a complex value is
    refused naming it (a numpy complex was sent as its real part, with a warning only)."""
    with Client(service.url, service.client_key, retries=0) as client:
        for actions, index in (([1.7], "0"), ([0, np.float64(2.5)], "1"), ([True], "0"),
                               ([None], "0")):
            with pytest.raises(IGLearnError, match=rf"^actions\[{index}\] is .*, not an action "
                                                   rf"index \(a whole number\)") as error:
                client.decide(np.ones(D_X), actions=actions)
            assert not isinstance(error.value, ServiceError)
            with pytest.raises(IGLearnError, match=rf"^actions\[{index}\] is "):
                client.decide_batch(np.ones((2, D_X)), actions=actions)
        with pytest.raises(IGLearnError, match=r"^actions\[0\] is 1\.7, not an action index"):
            client.decide(np.ones(D_X), actions=[1.7])
        assert client.decide(np.ones(D_X), actions=[2.0])["action"] == 2
        assert client.decide(np.ones(D_X), actions=[np.int64(1)])["action"] == 1
        assert {d["action"] for d in client.decide_batch(
            np.ones((5, D_X)), actions=[np.float32(0)])} == {0}
        complex_context = np.ones(D_X, dtype=complex)
        with pytest.raises(IGLearnError, match=r"^context is complex: dtype complex128; the "
                                               r"service takes real numbers"):
            client.decide(complex_context)
        with pytest.raises(IGLearnError, match=r"^contexts\[1\] is complex"):
            client.decide_batch([np.ones(D_X), complex_context])
        with pytest.raises(IGLearnError, match=r"^context\[1\] is complex: "):
            client.decide([0.0, np.complex128(1 + 2j), 0.0, 0.0])
        decision = client.decide(np.ones(D_X))
        with pytest.raises(IGLearnError, match=r"^feedback\[2\] is complex: \(1\+0j\)"):
            client.feedback(decision["event_id"], [0.0, 1.0, 1 + 0j])
        assert client.feedback(decision["event_id"], np.ones(D_Y)) == "joined"


def test_a_numpy_bool_is_sent_as_a_bool_and_a_huge_integer_is_refused_naming_it(service):
    """``definitely_bad`` may be a numpy bool (a mask's entry), sent as true or false (its
    JSON encoding failed with a TypeError); anything else that is no bool is refused naming
    it; an integer beyond a float's range is refused naming its field (a bare
    OverflowError)."""
    with Client(service.url, service.client_key, retries=0) as client:
        bad, good = (client.decide(np.ones(D_X))["event_id"] for _ in range(2))
        assert client.feedback(bad, np.ones(D_Y), definitely_bad=np.bool_(True)) == "joined"
        assert client.feedback(good, np.ones(D_Y), definitely_bad=np.False_) == "joined"
        joined = service.storage().joined()
        flags = dict(zip(joined.event_id, joined.definitely_bad.tolist(), strict=True))
        assert (flags[bad], flags[good]) == (True, False)
        other = client.decide(np.ones(D_X))["event_id"]
        for value in (1, "yes", None, np.array([True])):
            with pytest.raises(IGLearnError, match=r"^definitely_bad is .*, not a bool; pass "
                                                   r"True or False$"):
                client.feedback(other, np.ones(D_Y), definitely_bad=value)
        with pytest.raises(IGLearnError, match=r"^context\[2\] is too large for a float \(an "
                                               r"integer of about 10\*\*400\); the service "
                                               r"takes finite numbers only"):
            client.decide([0, 1, 10**400, 3])
        with pytest.raises(IGLearnError, match=r"^feedback\[0\] is too large for a float"):
            client.feedback(other, [-(10**400), 0, 0])
        assert client.feedback(other, [10**6, 0, 0]) == "joined"  # a Python int in range
