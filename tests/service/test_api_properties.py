"""A property-based sweep of the HTTP API (hypothesis): arbitrary JSON bodies, bytes and query
strings on every endpoint, with every role (no key, a wrong key, a client key, an admin key),
against real ``iglearn serve`` processes on loopback (one with keys; one serving the demo page,
whose API takes no key). The property: every answer is a 2xx, or a 4xx whose JSON body says
the error (a 422 naming the field), never a 500; and a 4xx stores nothing (the database's
counts, models, served version, keys and re-fit request are as before).

Bounded: a few hundred requests in all, no deadline. The learning worker looks for work once
an hour here, so nothing changes the database but the requests themselves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iglearn.service.demo import FEEDBACK_DIM, context_features, demo_tables
from iglearn.service.process import ServiceProcess, add_key, free_port, write_config
from iglearn.service.storage import SQLiteStorage, Storage

from .conftest import D_X, D_Y, K, tables

pytestmark = pytest.mark.slow

QUIET = {"min_interactions": 1_000_000, "max_interactions": 1_000_000,
         "poll_seconds": 3600.0, "refit_every": 1_000_000}
"""No re-fit starts during the sweep: the worker looks for work once an hour."""

# -- values --------------------------------------------------------------------------------
HUGE = [10**400, -(10**400), 10**20, 10**19, 2**63, 1e308, -1e308, 5e-324, math.nan,
        math.inf, -math.inf]
"""Numbers at and beyond what a JSON number may be (written as digits or literals)."""
numbers = st.one_of(st.sampled_from(HUGE), st.integers(-(10**6), 10**6),
                    st.integers(-(10**500), 10**500),
                    st.floats(allow_nan=True, allow_infinity=True))
entries = st.one_of(st.floats(-10, 10), st.floats(-10, 10), numbers)
"""A vector's entries: mostly plausible, often not."""
scalars = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=6), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)
EVENT_IDS = ("e1", "e2", "a.b:c-1")
"""A few event ids, so that generated feedback sometimes finds a generated decision."""
event_ids = st.one_of(st.sampled_from(EVENT_IDS), st.sampled_from(EVENT_IDS), scalars)


def vector(dim: int) -> st.SearchStrategy:
    """Vectors of ``dim`` entries mostly, of a neighbouring length or anything sometimes."""
    return st.one_of(st.lists(entries, min_size=dim, max_size=dim),
                     st.lists(entries, min_size=dim, max_size=dim),
                     st.lists(entries, min_size=max(dim - 1, 0), max_size=dim + 1), values)


def shaped(required: dict, optional: dict) -> st.SearchStrategy:
    """Objects with the ``required`` fields (each sometimes left out) and some ``optional``
    ones, each value from its strategy."""
    return st.fixed_dictionaries({}, optional=required | optional)


points = st.one_of(st.lists(st.lists(entries, min_size=2, max_size=2), min_size=2,
                            max_size=8), values)
SHAPES = {  # (path, method): well-shaped bodies of that endpoint
    "/v1/decide": lambda dx, dy: st.one_of(
        shaped({"context": vector(dx)}, {"event_id": event_ids,
                                         "actions": st.lists(numbers, max_size=4)}),
        shaped({"contexts": st.lists(vector(dx), min_size=1, max_size=3)},
               {"event_ids": st.lists(event_ids, max_size=3)})),
    "/v1/feedback": lambda dx, dy: shaped({"event_id": event_ids, "feedback": vector(dy)},
                                          {"definitely_bad": scalars}),
    "/v1/noop": lambda dx, dy: shaped({}, {"context": vector(dx), "feedback": vector(dy),
                                           "event_id": event_ids}),
    "/v1/model/rollback": lambda dx, dy: shaped({}, {"version": scalars}),
    "/demo/api/decide": lambda dx, dy: shaped({"colour": scalars, "shape": scalars}, {}),
    "/demo/api/feedback": lambda dx, dy: shaped({"event_id": event_ids, "stroke": points}, {}),
}

ENDPOINTS = [  # method, path, role needed (None: no key)
    ("POST", "/v1/decide", "client"), ("POST", "/v1/feedback", "client"),
    ("POST", "/v1/noop", "client"), ("GET", "/v1/model", "client"),
    ("PUT", "/v1/model", "admin"), ("POST", "/v1/model/refit", "admin"),
    ("POST", "/v1/model/rollback", "admin"), ("GET", "/v1/model/export", "admin"),
    ("GET", "/v1/log", "admin"), ("GET", "/healthz", None), ("GET", "/metrics", "admin"),
]
DEMO_ENDPOINTS = [
    ("GET", "/demo/api/status", "client"), ("POST", "/demo/api/decide", "client"),
    ("POST", "/demo/api/feedback", "client"), ("POST", "/demo/api/reset", "admin"),
    ("POST", "/v1/decide", "client"), ("POST", "/v1/feedback", "client"),
]
PARAMETERS = ("since", "until", "format", "wait")


def body_of(path: str, dims: tuple[int, int]) -> st.SearchStrategy[bytes]:
    """Bodies for the endpoint at ``path``: mostly objects shaped like its own, with values
    plausible or not; sometimes any JSON value or any bytes. Written as they come: NaN and
    Infinity literals, integers of hundreds of digits."""
    anything = st.one_of(values, st.dictionaries(st.text(max_size=8), values, max_size=3))
    shapes = SHAPES[path](*dims) if path in SHAPES else anything
    text = st.one_of(shapes, shapes, shapes, anything).map(
        lambda value: json.dumps(value, allow_nan=True).encode())
    return st.one_of(text, text, text, st.binary(max_size=40))


times = st.one_of(st.text(max_size=24), st.sampled_from([
    "0001-01-01", "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "1e400", "-1e400",
    "nan", "inf", "-inf", "1e308", "0", "2024-02-30", "2024-01-01T25:00", "2024-01-01",
    "99999-01-01", "1" + "0" * 400, "parquet", "dsjson", "npz", "csv"]))
queries = st.dictionaries(st.one_of(st.sampled_from(PARAMETERS), st.text(max_size=6)), times,
                          max_size=3)


def bounded_wait(query: dict[str, str]) -> dict[str, str]:
    """The query with a ``wait`` that would hold the request open (a number of seconds in
    (0.05, 600]) set to 0: the sweep does not wait for re-fits."""
    try:
        wait = float(query.get("wait", ""))
    except ValueError:
        return query
    return query | {"wait": "0"} if 0.05 < wait <= 600 else query


# -- the services -----------------------------------------------------------------------------
def snapshot(storage: Storage) -> tuple:
    """Everything a request could store."""
    models = [(m.version, m.created_at) for m in storage.models()]
    return (storage.counts(), models, storage.served_version(), sorted(storage.keys()),
            storage.state("refit_requested_at"))


class Target:
    """A running service, its database (read beside it) and its keys by role."""

    def __init__(self, process: ServiceProcess, db: Path, keys: dict[str | None, str | None]):
        self.process, self.storage, self.keys = process, SQLiteStorage(db), keys
        self.http = httpx.Client(base_url=process.url, timeout=30)

    def close(self) -> None:
        self.http.close()
        self.storage.close()
        self.process.stop()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keyed")
    config = write_config(folder / "service.toml", tables(learning=QUIET))
    keys = {"client": add_key(config, "client"), "admin": add_key(config, "admin"),
            "wrong": "iglk_not-a-key", None: None}  # healthz needs none
    target = Target(ServiceProcess(config, free_port()).start(), folder / "service.db", keys)
    yield target
    target.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    documents = demo_tables()
    documents["learning"] |= QUIET
    config = write_config(folder / "demo.toml", documents)
    process = ServiceProcess(config, free_port(), insecure_no_auth=True, demo=True).start()
    target = Target(process, folder / "demo.db", {None: None})
    yield target
    target.close()


def check(target: Target, method: str, path: str, body: bytes | None,
          query: dict[str, str], key: str | None) -> None:
    """Send one request and check the property."""
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    before = snapshot(target.storage)
    answer = target.http.request(method, path, content=body, params=bounded_wait(query),
                                 headers=headers)
    status = answer.status_code
    event(f"{status // 100}xx")  # --hypothesis-show-statistics: how far the sweep reaches
    assert status < 500, (method, path, body, query, answer.text)
    if status < 400:
        return
    error = answer.json()
    assert isinstance(error.get("error"), str) and error["error"], answer.text
    if status == 422:
        assert isinstance(error.get("field"), str) and error["field"], answer.text
    assert snapshot(target.storage) == before, (method, path, body, query, status)


HOW = settings(max_examples=150, deadline=None, derandomize=True, database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@HOW
@given(data=st.data())
def test_every_endpoint_and_role_answers_2xx_or_a_4xx_naming_the_problem(keyed, data):
    method, path, needed = data.draw(st.sampled_from(ENDPOINTS))
    # mostly the role the endpoint needs (so that the body is read), else any other
    role = data.draw(st.sampled_from([needed, needed, "admin", "client", "wrong", None]))
    body = data.draw(body_of(path, (D_X, D_Y))) if method in ("POST", "PUT") else None
    check(keyed, method, path, body, data.draw(queries), keyed.keys[role])


@HOW
@given(data=st.data())
def test_the_demo_api_answers_2xx_or_a_4xx_naming_the_problem(demo, data):
    method, path, _ = data.draw(st.sampled_from(DEMO_ENDPOINTS))
    dims = (len(context_features(0, 0)), FEEDBACK_DIM)
    body = data.draw(body_of(path, dims)) if method == "POST" else None
    check(demo, method, path, body, data.draw(queries), None)


def test_the_sweep_reaches_past_the_checks(keyed):
    """The sweep's bodies are not all refused at the first check: well-formed requests of
    the same shapes are decided, joined and stored."""
    client = {"authorization": f"Bearer {keyed.keys['client']}"}
    decided = keyed.http.post("/v1/decide", json={"context": [1e9, 0, -1, 10**19 // 10**10],
                                                  "event_id": "sweep-ok"}, headers=client)
    assert decided.status_code == 200, decided.text
    joined = keyed.http.post("/v1/feedback", json={"event_id": "sweep-ok",
                                                   "feedback": [0, 1, 12345678901234567890
                                                                // 10**12]}, headers=client)
    assert joined.status_code == 204, joined.text
    assert len(decided.json()["probabilities"]) == K
