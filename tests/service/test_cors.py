"""CORS (``[server] cors_origins``): a page on an allowed origin may call the service from a
browser. Its preflight is answered 204 without a key, every answer to it (errors too, on the
hot routes as on the others) carries ``Access-Control-Allow-Origin``; another origin gets no
CORS header, and its preflight a 403 naming ``origin``. Without the setting nothing changes."""

from __future__ import annotations

import httpx
import pytest

from iglearn.cli import main

from .conftest import start_service

ALLOWED = "https://app.example.com"
OTHER = "https://evil.example.net"


@pytest.fixture(scope="module")
def cors_service(tmp_path_factory):
    running = start_service(tmp_path_factory.mktemp("cors"),
                            server={"cors_origins": [ALLOWED, "http://localhost:3000"]})
    yield running
    running.stop()


def cors(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def preflight(url: str, path: str, origin: str, method: str = "POST",
              headers: str = "authorization, content-type") -> httpx.Response:
    """A browser's preflight, which carries no key."""
    return httpx.options(url + path, timeout=30, headers={
        "origin": origin, "access-control-request-method": method,
        "access-control-request-headers": headers})


@pytest.mark.parametrize(("path", "method", "methods"), [
    ("/v1/decide", "POST", {"POST"}),  # a hot route
    ("/v1/feedback", "POST", {"POST"}),
    ("/v1/model", "PUT", {"GET", "HEAD", "PUT"}),
    ("/v1/model/refit", "POST", {"POST"}),
    ("/healthz", "GET", {"GET", "HEAD"}),
])
def test_a_preflight_from_an_allowed_origin_is_answered_without_a_key(cors_service, path,
                                                                         method, methods):
    response = preflight(cors_service.url, path, ALLOWED, method)
    assert response.status_code == 204, response.text
    headers = response.headers
    assert headers["access-control-allow-origin"] == ALLOWED
    assert {m.strip() for m in headers["access-control-allow-methods"].split(",")} == methods
    allowed = {h.strip().lower() for h in headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed
    assert int(headers["access-control-max-age"]) > 0
    assert headers["vary"] == "Origin"
    assert "access-control-allow-credentials" not in headers


def test_a_preflight_from_another_origin_is_a_403_naming_origin(cors_service):
    for path in ("/v1/decide", "/v1/model"):
        response = preflight(cors_service.url, path, OTHER)
        assert response.status_code == 403
        assert response.json()["field"] == "origin"
        assert OTHER in response.json()["error"] and "cors_origins" in response.json()["error"]
        assert cors(response) == {}


def test_answers_to_an_allowed_origin_carry_its_headers_errors_too(cors_service):
    with cors_service.http() as http:
        http.headers["origin"] = "http://localhost:3000"
        decided = http.post("/v1/decide", json={"context": [0.1, 0.2, 0.3, 0.4]})
        assert decided.status_code == 200
        given = http.post("/v1/feedback", json={"event_id": decided.json()["event_id"],
                                                "feedback": [1.0, 0.0, 0.0]})
        assert given.status_code == 204
        exposed = {h.strip().lower() for h in
                   given.headers["access-control-expose-headers"].split(",")}
        assert {"iglearn-feedback", "retry-after", "www-authenticate"} <= exposed
        answers = [decided, given, http.get("/v1/model"),
                   http.post("/v1/decide", json={"context": [1.0]}),  # 422
                   http.post("/v1/decide", json={"context": [0, 0, 0, 0]},
                             headers={"authorization": "Bearer wrong"}),  # 401
                   http.post("/v1/model/refit"),  # 403: a client key
                   http.get("/v1/nothing"),  # 404
                   http.get("/v1/decide")]  # 405
        assert [r.status_code for r in answers] == [200, 204, 200, 422, 401, 403, 404, 405]
        for response in answers:
            assert response.headers["access-control-allow-origin"] == "http://localhost:3000"
            assert response.headers["vary"] == "Origin"
            assert "access-control-allow-credentials" not in response.headers
        http.headers["origin"] = OTHER
        for response in (http.post("/v1/decide", json={"context": [0.1, 0.2, 0.3, 0.4]}),
                         http.get("/v1/model"), http.post("/v1/decide", json={})):
            assert response.status_code in (200, 422)
            assert cors(response) == {} and "vary" not in response.headers


def test_without_the_setting_nothing_changes(service):
    response = preflight(service.url, "/v1/decide", ALLOWED)
    assert response.status_code == 405
    assert response.json()["field"] == "method" and cors(response) == {}
    with service.http() as http:
        http.headers["origin"] = ALLOWED
        for response in (http.post("/v1/decide", json={"context": [0.1, 0.2, 0.3, 0.4]}),
                         http.get("/v1/model"), http.post("/v1/decide", json={})):
            assert response.status_code in (200, 422)
            assert cors(response) == {} and "vary" not in response.headers


@pytest.mark.parametrize(("value", "shown"), [
    ('["https://app.example.com/"]', "'https://app.example.com/'"),
    ('["app.example.com"]', "'app.example.com'"),
    ('["ftp://app.example.com"]', "'ftp://app.example.com'"),
    ('["https://app.example.com:443"]', "'https://app.example.com:443'"),
    ('["*", "https://app.example.com"]', "'*'"),
    ('"https://app.example.com"', "'https://app.example.com'"),
])
def test_a_value_that_is_no_origin_is_refused_at_start(tmp_path, capsys, value, shown):
    path = tmp_path / "svc.toml"
    path.write_text(f"[model]\nn_actions = 3\ncontext_dim = 2\nfeedback_dim = 2\n"
                    f"[server]\ncors_origins = {value}\n")
    assert main(["serve", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iglearn: error: ") and len(err.strip().splitlines()) == 1
    assert "[server] cors_origins" in err and shown in err and "scheme://host[:port]" in err


def test_any_origin_with_a_star(tmp_path):
    running = start_service(tmp_path, server={"cors_origins": ["*"]})
    try:
        response = preflight(running.url, "/v1/decide", OTHER)
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == OTHER
        with running.http() as http:
            decided = http.post("/v1/decide", json={"context": [0.1, 0.2, 0.3, 0.4]},
                                headers={"origin": "http://localhost:5173"})
            assert decided.status_code == 200
            assert decided.headers["access-control-allow-origin"] == "http://localhost:5173"
    finally:
        running.stop()
