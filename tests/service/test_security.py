"""The security sweep: every endpoint without a key, with a wrong key and with a client key
where an admin one is needed; malformed, oversized and wrong-dimension bodies. Each gets its
status (the field named where one is wrong) and nothing is stored."""

from __future__ import annotations

import pytest

from iglearn.service.keys import digest

ENDPOINTS = [  # method, path, role needed, body
    ("POST", "/v1/decide", "client", {"context": [0, 0, 0, 0]}),
    ("POST", "/v1/feedback", "client", {"event_id": "x", "feedback": [0, 0, 0]}),
    ("POST", "/v1/noop", "client", {}),
    ("GET", "/v1/model", "client", None),
    ("PUT", "/v1/model", "admin", None),
    ("POST", "/v1/model/refit", "admin", None),
    ("POST", "/v1/model/rollback", "admin", {}),
    ("GET", "/v1/model/export", "admin", None),
    ("GET", "/v1/log", "admin", None),
    ("GET", "/metrics", "admin", None),
]


def snapshot(service) -> tuple:
    storage = service.storage()
    models = [(m.version, m.created_at) for m in storage.models()]
    return (storage.counts(), models, storage.served_version(), sorted(storage.keys()),
            storage.state("refit_requested_at"))


def test_keys_and_roles(service):
    before = snapshot(service)
    for who, expected in ((None, 401), ("iglk_not-a-key", 401), ("Basic abc", 401)):
        with service.http(who) as http:
            for method, path, _, body in ENDPOINTS:
                answer = http.request(method, path, json=body)
                assert answer.status_code == expected, (who, path, answer.text)
                assert "error" in answer.json()
    with service.http("client") as http:
        for method, path, role, body in ENDPOINTS:
            if role == "admin":
                assert http.request(method, path, json=body).status_code == 403, path
    with service.http(None) as http:  # the scheme must be Bearer
        wrong_scheme = http.get("/v1/model", headers={"authorization": service.client_key})
        assert wrong_scheme.status_code == 401
        assert http.get("/healthz").status_code == 200
    assert snapshot(service) == before


def test_a_refused_key_names_authorization_and_a_401_carries_its_challenge(service):
    """A 401 names the ``authorization`` header as its field and carries the
    ``WWW-Authenticate: Bearer`` challenge that HTTP requires of a 401 (clients and proxies
    read the scheme to send from it); a 403 names the header too."""
    for who in (None, "iglk_not-a-key", "Basic abc"):
        with service.http(who) as http:
            for method, path, _, body in ENDPOINTS:
                answer = http.request(method, path, json=body)
                assert answer.status_code == 401, (who, path, answer.text)
                assert answer.headers["www-authenticate"].startswith("Bearer"), path
                assert answer.json()["field"] == "authorization", path
    with service.http("client") as http:
        answer = http.get("/metrics")
        assert answer.status_code == 403 and answer.json()["field"] == "authorization"
        assert "www-authenticate" not in answer.headers


DECIDE_BAD = [
    (b"{not json", "body"),
    (b"[1, 2]", "body"),
    (b'{"context": [0, 0, 0, 0], "extra": 1}', "extra"),
    (b'{"context": [0, 0, 0]}', "context"),
    (b'{"context": [0, 0, 0, 0, 0]}', "context"),
    (b'{"context": [NaN, 0, 0, 0]}', "context"),
    (b'{"context": [0, Infinity, 0, 0]}', "context"),
    (b'{"context": [0, 0, 1e999, 0]}', "context"),
    (b'{"context": [0, 0, 0, "1"]}', "context"),
    (b'{"context": [0, 0, 0, true]}', "context"),
    (b'{"context": [0, 0, 0, 1e12]}', "context"),
    (b'{"context": "0,0,0,0"}', "context"),
    (b'{}', "context"),
    (b'{"context": [0, 0, 0, 0], "event_id": "a b"}', "event_id"),
    (b'{"context": [0, 0, 0, 0], "event_id": 7}', "event_id"),
    (b'{"context": [0, 0, 0, 0], "actions": [3]}', "actions"),
    (b'{"context": [0, 0, 0, 0], "actions": [1, 1]}', "actions"),
    (b'{"context": [0, 0, 0, 0], "actions": []}', "actions"),
    (b'{"contexts": [[0, 0, 0, 0], [0, 0, 0]]}', "contexts[1]"),
    (b'{"contexts": []}', "contexts"),
    (b'{"contexts": [[0, 0, 0, 0]], "event_ids": ["a", "b"]}', "event_ids"),
    (b'{"contexts": [[0, 0, 0, 0], [1, 1, 1, 1]], "event_ids": ["a", "a"]}', "event_ids[1]"),
]
FEEDBACK_BAD = [
    (b'{"feedback": [0, 0, 0]}', "event_id"),
    (b'{"event_id": "e"}', "feedback"),
    (b'{"event_id": "e", "feedback": [0, 0]}', "feedback"),
    (b'{"event_id": "e", "feedback": [0, NaN, 0]}', "feedback"),
    (b'{"event_id": "e", "feedback": [0, -Infinity, 0]}', "feedback"),
    (b'{"event_id": "e", "feedback": [0, 0, 0], "definitely_bad": 1}', "definitely_bad"),
]


HUGE = b"1" + b"0" * 400
"""A JSON integer no float holds."""
NUMBERS_BAD = [  # a number no vector can hold, in every vector and every place of one
    *((b'{"context": [%s]}' % b", ".join(HUGE if i == j else b"0" for j in range(4)),
       "context") for i in range(4)),
    (b'{"context": [-' + HUGE + b', 0, 0, 0]}', "context"),
    (b'{"context": [0, 0, 0, 123456789012345678901]}', "context"),
    (b'{"contexts": [[0, 0, 0, 0], [0, 0, ' + HUGE + b', 0]]}', "contexts"),
    (b'{"contexts": [[' + HUGE + b', 0, 0, 0]], "event_ids": ["x"]}', "contexts"),
    (b'{"context": [0, 0, 0, 0], "actions": [' + HUGE + b']}', "actions"),
    (b'{"context": [0, 0, 0, 0], "event_id": ' + HUGE + b'}', "event_id"),
    (b'{"context": [0, 0, 0, 0], "context": [1, 1, 1, 1]}', "context"),
    (b'{"context": [1e400, 0, 0, 0]}', "context"),
    (b'{"context": [0, 0, 0, 0], "x": [NaN]}', "x"),
]
FEEDBACK_NUMBERS_BAD = [
    *((b'{"event_id": "e", "feedback": [%s]}' % b", ".join(
        HUGE if i == j else b"0" for j in range(3)), "feedback") for i in range(3)),
    (b'{"event_id": "e", "feedback": [0, 0, -' + HUGE + b']}', "feedback"),
    (b'{"event_id": "e", "feedback": [0, 0, 0], "definitely_bad": ' + HUGE + b'}',
     "definitely_bad"),
    (b'{"event_id": "e", "feedback": [0, 1e309, 0]}', "feedback"),
]


@pytest.mark.parametrize(("path", "body", "field"),
                         [("/v1/decide", b, f) for b, f in DECIDE_BAD + NUMBERS_BAD]
                         + [("/v1/feedback", b, f) for b, f in
                            FEEDBACK_BAD + FEEDBACK_NUMBERS_BAD]
                         + [("/v1/noop", b, f) for b, f in NUMBERS_BAD[:3]])
def test_malformed_bodies_name_the_field(service, path, body, field):
    before = snapshot(service)
    with service.http() as http:
        answer = http.post(path, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field
    assert snapshot(service) == before


def test_oversized_and_admin_parameters(service):
    before = snapshot(service)
    big = b'{"context": [' + b"0," * 600_000 + b"0]}"
    with service.http() as http:
        assert http.post("/v1/decide", content=big).status_code == 413
        chunks = (big[i:i + 65536] for i in range(0, len(big), 65536))  # no content-length
        assert http.post("/v1/decide", content=chunks).status_code == 413
        assert http.post("/v1/feedback", content=big).status_code == 413
    with service.http("admin") as admin:
        assert admin.post("/v1/model/rollback", json={"version": "x"}).status_code in (409, 422)
        assert admin.post("/v1/model/refit?wait=-1").json()["field"] == "wait"
        assert admin.get("/v1/log?since=yesterday").json()["field"] == "since"
        assert admin.put("/v1/model", content=b"\x1f\x8b garbage").status_code == 422
    assert snapshot(service) == before


TIMES_BAD = ["0001-01-01", "0001-01-01T00:00:00", "1e400",
             "-1e400", "nan", "inf", "1e13", "99999-01-01", "2024-02-30", "1" + "0" * 400]


def test_times_out_of_range_in_query_parameters_are_422s_naming_them(service):
    before = snapshot(service)
    with service.http("admin") as admin:
        for name in ("since", "until"):
            for value in TIMES_BAD:
                answer = admin.get("/v1/log", params={name: value})
                assert answer.status_code == 422, (name, value, answer.text)
                assert answer.json()["field"] == name
        for value in TIMES_BAD + ["601", "-0.5"]:
            answer = admin.post("/v1/model/refit", params={"wait": value})
            assert answer.status_code == 422 and answer.json()["field"] == "wait", value
        assert admin.get("/v1/log", params={"since": "9999-12-31"}).status_code == 404
    assert snapshot(service) == before


def stored_bytes(service) -> bytes:
    """Everything the service's database holds: its SQLite files, or every row of its
    PostgreSQL tables as text."""
    if "://" not in service.db:
        return b"".join(path.read_bytes() for path in service.folder.glob("service.db*"))
    import psycopg

    with psycopg.connect(service.db) as connection:
        tables = [r[0] for r in connection.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'iglearn%'").fetchall()]
        return b"".join(
            (connection.execute(f"SELECT coalesce(string_agg(t::text, ' '), '') FROM {name} t"
                                ).fetchone()[0]).encode() for name in tables)


def test_keys_are_stored_hashed_and_never_logged(service):
    with service.http("admin") as admin:
        admin.get("/v1/model")
    with service.http("iglk_wrong-key-in-a-log") as http:
        http.get("/v1/model")
    log = service.process.log.read_text()
    database = stored_bytes(service)
    for key in (service.client_key, service.admin_key, "iglk_wrong-key-in-a-log"):
        assert key not in log
        assert key.encode() not in database
    assert digest(service.admin_key).encode() in database
