"""The HTTP API of a real service process: decisions, feedback, the model's versions, the
log export and the metrics."""

from __future__ import annotations

import time
import uuid
import warnings

import numpy as np
import pandas as pd
import pytest

from iglearn.data.formats import read_log
from iglearn.errors import IGLearnError
from iglearn.learners.registry import save_model
from iglearn.models.archive import load_archive, pack_model, unpack_model
from iglearn.service.storage import FeedbackOutcome

from .conftest import D_X, D_Y, K, play, start_service


def test_decide_logs_exact_probabilities(service):
    with service.http() as http:
        answer = http.post("/v1/decide", json={"context": [0.1, 0.2, 0.3, 0.4]})
        assert answer.status_code == 200
        decision = answer.json()
        assert set(decision) == {"event_id", "action", "probability", "probabilities",
                                 "model_version", "explored"}
        assert decision["probability"] == decision["probabilities"][decision["action"]]
        assert abs(sum(decision["probabilities"]) - 1) < 1e-9
        restricted = http.post("/v1/decide", json={"context": [0, 0, 0, 1], "actions": [2]})
        assert restricted.json()["action"] == 2 and restricted.json()["probability"] == 1.0
    stored = service.storage()._decision(decision["event_id"])
    assert stored.action == decision["action"]
    assert stored.probability == decision["probability"]
    assert stored.model_version == decision["model_version"]


def test_named_actions_are_answered_and_allowed_by_name(tmp_path):
    """With ``[model] actions``, each decision gives its action's name beside its index, and
    the allowed actions may be named; a name the service does not know is a 422 naming the
    field, and so is an imported model fitted on the actions named in another order."""
    from .conftest import start_service

    names = [f"gesture {a}" for a in range(K)]
    running = start_service(tmp_path, model={"actions": names})
    try:
        with running.http() as http:
            batch = http.post("/v1/decide", json={"contexts": [[0, 0, 0, 1]] * 3}).json()
            for decision in batch["decisions"]:
                assert decision["action_name"] == names[decision["action"]]
            named = http.post("/v1/decide", json={"context": [0, 0, 0, 1],
                                                  "actions": [names[2]]}).json()
            assert (named["action"], named["action_name"]) == (2, names[2])
            mixed = http.post("/v1/decide", json={"context": [0, 0, 0, 1],
                                                  "actions": [1, names[1]]})
            assert mixed.status_code == 422 and "listed twice" in mixed.text
            unknown = http.post("/v1/decide", json={"context": [0, 0, 0, 1],
                                                    "actions": ["gesture 99"]})
            assert unknown.status_code == 422
            assert "'gesture 99' is not an action index" in unknown.text
            assert "or an action's name" in unknown.text and "actions" in unknown.text
            # an imported model fitted on named actions must name them in the same order
            with running.http("admin") as admin:
                before = len(admin.get("/v1/model").json()["versions"])
                other = admin.put("/v1/model", content=_named_model(tmp_path, names[::-1]))
                assert other.status_code == 422 and other.json()["field"] == "actions"
                assert f"--actions '{','.join(names)}'" in other.json()["error"]
                assert len(admin.get("/v1/model").json()["versions"]) == before
                same = admin.put("/v1/model", content=_named_model(tmp_path, names))
                assert same.status_code == 201, same.text
                unnamed = admin.put("/v1/model", content=_named_model(tmp_path, None))
                assert unnamed.status_code == 201, unnamed.text
    finally:
        running.stop()


def _named_model(folder, names: list[str] | None, context: list[str] | None = None,
                 feedback: list[str] | None = None) -> bytes:
    """The archive of a 2021 IGL model of the services' shape fitted on a small random log,
    its feature schema naming the actions ``names`` (None: indices only), the context
    columns ``context`` and the feedback columns ``feedback`` (None: not named)."""
    from iglearn.data.formats.base import FeatureSchema
    from iglearn.data.frames import ColumnMapping
    from iglearn.data.logs import InteractionLog
    from iglearn.learners import BatchIGL, IdentifiabilityWarning

    rng = np.random.default_rng(0)
    n = 60
    log = InteractionLog(context=rng.random((n, D_X), dtype=np.float32),
                         action=rng.integers(0, K, n), probability=np.full(n, 1.0 / K),
                         feedback=rng.random((n, D_Y), dtype=np.float32), n_actions=K)
    with warnings.catch_warnings():  # a random log: nothing to identify
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        learner = BatchIGL(seed=0).fit(log)
    mapping = None
    if names is not None or context is not None or feedback is not None:
        mapping = ColumnMapping(actions=None if names is None else tuple(names),
                                context=None if context is None else tuple(context),
                                feedback=None if feedback is None else tuple(feedback))
    schema = FeatureSchema(tuple(f"x{i}" for i in range(D_X)),
                           tuple(f"y{i}" for i in range(D_Y)), mapping)
    path = folder / (f"model-{'-'.join(names or ['indices'])}-{'-'.join(context or ['x'])}"
                     f"-{'-'.join(feedback or ['y'])}")
    save_model(learner, path, schema)
    return pack_model(path)


def test_an_imported_model_must_read_the_context_in_the_services_order(tmp_path):
    """With ``[model] context_names``, a model fitted offline on named context columns in
    another order (or other names) is refused (it decided every context as if its entries
    were other features); in the same order, or unnamed, it is served."""
    from .conftest import start_service

    names = ["temp_c", "ms", "count", "amp"]
    running = start_service(tmp_path, model={"context_names": names})
    try:
        with running.http("admin") as admin:
            other = admin.put("/v1/model", content=_named_model(tmp_path, None, names[::-1]))
            assert other.status_code == 422 and other.json()["field"] == "context_names"
            assert "in another order than this service's" in other.json()["error"]
            assert "--context temp_c,ms,count,amp" in other.json()["error"]
            same = admin.put("/v1/model", content=_named_model(tmp_path, None, names))
            assert same.status_code == 201, same.text
            unnamed = admin.put("/v1/model", content=_named_model(tmp_path, None))
            assert unnamed.status_code == 201, unnamed.text
    finally:
        running.stop()


def test_an_imported_model_must_read_the_feedback_in_the_services_order(tmp_path):
    from .conftest import start_service

    names = ["dwell_ms", "clicked", "scrolled"]
    running = start_service(tmp_path, model={"feedback_names": names})
    try:
        with running.http("admin") as admin:
            other = admin.put("/v1/model", content=_named_model(tmp_path, None,
                                                                feedback=names[::-1]))
            assert other.status_code == 422 and other.json()["field"] == "feedback_names"
            assert "the feedback columns ['scrolled', 'clicked', 'dwell_ms'], in another " \
                   "order than this service's [model] feedback_names" in other.json()["error"]
            assert "--feedback dwell_ms,clicked,scrolled" in other.json()["error"]
            same = admin.put("/v1/model", content=_named_model(tmp_path, None, feedback=names))
            assert same.status_code == 201, same.text
    finally:
        running.stop()


def test_batch_and_idempotent_event_ids(service):
    with service.http() as http:
        batch = http.post("/v1/decide", json={"contexts": [[1, 2, 3, 4], [4, 3, 2, 1]],
                                              "event_ids": ["batch-a", "batch-b"]}).json()
        assert [d["event_id"] for d in batch["decisions"]] == ["batch-a", "batch-b"]
        first = http.post("/v1/decide", json={"context": [1, 1, 1, 1], "event_id": "same"})
        again = http.post("/v1/decide", json={"context": [1, 1, 1, 1], "event_id": "same"})
        assert first.json() == again.json()
        # made by the service: version 7 UUIDs, whose first 12 digits (the time) grow
        made = [http.post("/v1/decide", json={"context": [1, 1, 1, 1]}).json()["event_id"]
                for _ in range(2)]
        assert [uuid.UUID(hex=m).version for m in made] == [7, 7]
        assert made[0][:12] <= made[1][:12]
    assert service.storage().counts().decisions >= 4


def test_an_event_id_stored_with_another_context_is_refused(service):
    """A retry sends the context it sent first and gets the stored decision; another context
    under a stored id is a second decision, answered 409 naming the field (it was answered
    with the first decision's action, and its feedback joined to the first context). A
    batch's other decisions come back as stored when it is sent again with the id changed."""
    with service.http() as http:
        first = http.post("/v1/decide", json={"context": [37.5, 38, 36.25, 40],
                                              "event_id": "reused"}).json()
        retried = http.post("/v1/decide", json={"context": [37.5, 38, 36.25, 40],
                                                "event_id": "reused"})
        assert retried.status_code == 200 and retried.json() == first
        other = http.post("/v1/decide", json={"context": [37.5, 38, 36.25, 41],
                                              "event_id": "reused"})
        assert other.status_code == 409 and other.json()["field"] == "event_id", other.text
        assert "event id reused is already stored with another context" in other.text
        excluded = [a for a in range(K) if a != first["action"]]
        narrowed = http.post("/v1/decide", json={"context": [37.5, 38, 36.25, 40],
                                                 "event_id": "reused", "actions": excluded})
        assert narrowed.status_code == 409 and "which this request's actions exclude" in \
            narrowed.text, narrowed.text
        twice = http.post("/v1/decide", json={"contexts": [[1, 2, 3, 4]] * 3,
                                              "event_ids": ["d1", "d2", "d1"]})
        assert twice.status_code == 422 and twice.json()["field"] == "event_ids[2]"
        assert "event id d1 appears twice (at 0 and 2)" in twice.text
        batch = {"contexts": [[1, 2, 3, 4], [9, 9, 9, 9]], "event_ids": ["fresh-1", "reused"]}
        refused = http.post("/v1/decide", json=batch)
        assert refused.status_code == 409 and refused.json()["field"] == "event_ids[1]"
        again = http.post("/v1/decide", json=batch | {"event_ids": ["fresh-1", "fresh-2"]})
        assert again.status_code == 200
        decisions = again.json()["decisions"]
        assert [d["event_id"] for d in decisions] == ["fresh-1", "fresh-2"]


def test_feedback_outcomes(service):
    with service.http() as http:
        eid = http.post("/v1/decide", json={"context": [0, 1, 0, 1]}).json()["event_id"]
        body = {"event_id": eid, "feedback": [1.0, 0.0, 0.0]}
        joined = http.post("/v1/feedback", json=body)
        assert joined.status_code == 204 and joined.headers["iglearn-feedback"] == "joined"
        assert http.post("/v1/feedback", json=body).status_code == 409
        assert http.post("/v1/feedback", json=body | {"event_id": "nope"}).status_code == 404
        for unnamed in ({"feedback": [1.0, 0.0, 0.0]}, {"event_id": None, "feedback": [1, 0, 0]}):
            refused = http.post("/v1/feedback", json=unnamed)  # not a decision made up for it
            assert refused.status_code == 422 and refused.json() == {
                "error": "missing: the event id of the decision this feedback answers",
                "field": "event_id"}, refused.text
        late_id = http.post("/v1/decide", json={"context": [0, 1, 0, 1]}).json()["event_id"]
        time.sleep(1.2)   # the module's service has a join window of 1 s
        late = http.post("/v1/feedback", json={"event_id": late_id, "feedback": [0, 1, 0],
                                               "definitely_bad": True})
        assert late.status_code == 204 and late.headers["iglearn-feedback"] == "late"
        eid = http.post("/v1/decide", json={"context": [0, 1, 0, 0]}).json()["event_id"]
        unsaid = http.post("/v1/feedback", json={"event_id": eid, "feedback": [0, 0, 1],
                                                 "definitely_bad": None})  # as if left out
        assert unsaid.status_code == 204, unsaid.text
    joined_ids = service.storage().joined().event_id
    assert eid in joined_ids and late_id not in joined_ids
    assert service.storage().counts().late >= 1


def test_refit_rollback_export_import_and_log(service, tmp_path):
    rng = np.random.default_rng(0)
    with service.http() as http, service.http("admin") as admin:
        ids = play(http, 120, rng)
        # seconds, not a time; nor what Python's float reads but no client means (1_0 was 10
        # s, an Arabic-Indic digit 3 was 3, a leading space was ignored)
        for wait in ("abc", "nan", "-1", "601", "2026-01-01T00:00:00", "1_0", "%D9%A3",
                     "%201", "inf"):
            bad = admin.post(f"/v1/model/refit?wait={wait}")
            assert bad.status_code == 422 and bad.json()["field"] == "wait", bad.text
            assert bad.json()["error"] == "must be seconds in [0, 600]"
        for since in ("1_0", "%D9%A3"):
            bad = admin.get(f"/v1/log?since={since}")
            assert bad.status_code == 422 and bad.json()["field"] == "since", bad.text
        versions = len(admin.get("/v1/model").json()["versions"])
        typo = admin.post("/v1/model/refit?wiat=3")  # not a re-fit that does not wait
        assert typo.status_code == 422 and typo.json() == {
            "error": "is not a query parameter of this endpoint (it reads wait)",
            "field": "wiat"}, typo.text
        assert len(admin.get("/v1/model").json()["versions"]) == versions
        first = admin.post("/v1/model/refit?wait=120")
        assert first.status_code == 200, first.text
        v1 = first.json()["version"]
        assert v1 >= 1 and first.json()["interactions"] > 0
        assert first.json()["indicator"] is not None and "lemma5" in first.json()
        decision = http.post("/v1/decide", json={"context": [1, 0, 0, 0]}).json()
        assert decision["model_version"] == v1
        v2 = admin.post("/v1/model/refit?wait=120").json()["version"]
        assert v2 == v1 + 1
        back = admin.post("/v1/model/rollback", json={})
        assert back.status_code == 200 and back.json()["version"] == v1
        assert http.get("/v1/model").json()["version"] == v1
        assert admin.post("/v1/model/rollback", json={"version": v2}).status_code == 200
        bare = admin.post("/v1/model/rollback")  # no body: its fields are all optional
        assert bare.status_code == 200 and bare.json()["version"] == v1, bare.text
        exported = admin.get("/v1/model/export")
        assert exported.status_code == 200
        learner = load_archive(exported.content)
        assert learner.predict_proba(np.zeros((2, D_X), np.float32)).shape == (2, K)
        imported = admin.put("/v1/model", content=exported.content)
        assert imported.status_code == 201 and imported.json()["version"] > v2
        assert imported.json()["source"] == "import"
        # a model of another shape, or not a model at all, is refused and nothing is stored
        before = len(admin.get("/v1/model").json()["versions"])
        wrong = tmp_path / "wrong"
        wrong.mkdir()
        unpack_model(exported.content, wrong)
        other = load_archive(exported.content)
        other.policy_.net.weight.data = other.policy_.net.weight.data[:, :2].contiguous()
        other.policy_.net.in_features = 2
        other.standardiser_ = None  # its statistics are of 4 columns
        save_model(other, tmp_path / "narrow")
        refused = admin.put("/v1/model", content=pack_model(tmp_path / "narrow"))
        assert refused.status_code == 422, refused.json()
        assert refused.json()["field"] == "context_dim", refused.json()
        garbage = admin.put("/v1/model", content=b"not an archive")
        assert garbage.status_code == 422
        assert len(admin.get("/v1/model").json()["versions"]) == before
        for fmt in ("parquet", "dsjson", "npz"):
            response = admin.get(f"/v1/log?format={fmt}")
            assert response.status_code == 200, response.text
            path = tmp_path / f"log.{fmt}"
            path.write_bytes(response.content)
            log = read_log(path)
            assert log.n_actions == K and log.feedback_dim == D_Y
            assert len(log) >= len(ids)
        # the Parquet log carries what joins it to the application's records
        table = pd.read_parquet(tmp_path / "log.parquet")
        assert set(ids) <= set(table["event_id"]) and table["decided_at"].is_monotonic_increasing
        assert (table["model_version"] >= 0).all() and len(table) == len(log)
        empty = admin.get("/v1/log", params={"until": "2000-01-01T00:00:00"})
        assert empty.status_code == 404
        assert admin.get("/v1/log?format=csv").json()["field"] == "format"
        # a misspelt filter is not the whole log, and a window that ends before it begins
        # is a mistake, not an empty log
        typo = admin.get("/v1/log", params={"sinec": "2100000000"})
        assert typo.status_code == 422 and typo.json()["field"] == "sinec", typo.text
        assert "(it reads since, until, format)" in typo.json()["error"]
        twice = admin.get("/v1/log?since=0&since=5")
        assert twice.status_code == 422 and twice.json() == {
            "error": "is given more than once; give it once", "field": "since"}, twice.text
        # an offset's + left unencoded arrives as a space: read as the + it was
        spaced = admin.get("/v1/log?until=2000-01-01T05:00:00+05:00")
        assert spaced.status_code == 404, spaced.text  # the window is read, and empty
        backwards = admin.get("/v1/log", params={"since": "2000000000", "until": "1000000000"})
        assert backwards.status_code == 422 and backwards.json()["field"] == "until"
        assert "is before since" in backwards.json()["error"]


def test_health_and_metrics(service):
    with service.http() as http:  # a decision of this test's own, timed in the metrics
        assert http.post("/v1/decide", json={"context": [0, 0, 0, 0]}).status_code == 200
    with service.http(None) as anyone, service.http("admin") as admin:
        assert anyone.get("/healthz").json()["status"] == "ok"
        assert anyone.get("/readyz").json() == {"ready": True}
        text = admin.get("/metrics").text
    for name in ("iglearn_decisions_total", "iglearn_feedback_join_rate",
                 "iglearn_late_feedback_total", 'iglearn_request_seconds_bucket{endpoint="decide"',
                 "iglearn_model_version", "iglearn_model_indicator", "iglearn_refit_seconds",
                 "iglearn_learning_worker_up 1", "iglearn_learning_worker_deaths_total 0"):
        assert name in text
    for line in text.splitlines():
        assert line.startswith("#") or len(line.split(" ")) == 2, line


def test_every_endpoint_refuses_a_query_parameter_it_does_not_read(service):
    with service.http("admin") as admin:
        for method, path in (("POST", "/v1/decide"), ("POST", "/v1/feedback"),
                             ("POST", "/v1/noop"), ("GET", "/v1/model"),
                             ("POST", "/v1/model/rollback"), ("GET", "/v1/model/export"),
                             ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics")):
            answer = admin.request(method, f"{path}?wait=3", json={"context": [0, 0, 0, 0]})
            assert answer.status_code == 422 and answer.json() == {
                "error": "is not a query parameter of this endpoint (it reads none)",
                "field": "wait"}, (path, answer.text)


def test_the_hot_routes_answer_as_routes_do(service):
    """Decide, feedback and the no-op are taken straight to their handlers for POST; every
    other method on their paths, and every other path, still goes through the router."""
    with service.http() as http:
        for path in ("/v1/decide", "/v1/feedback", "/v1/noop"):
            assert http.get(path).status_code == 405
        assert http.post("/v1/nothing-here", json={}).status_code == 404
        assert http.post("/v1/noop", json={"context": [0, 0, 0, 0]}).json() == {}
        wrong = http.post("/v1/decide", json={"context": [0, 0, 0, 0], "colour": 1})
        assert wrong.status_code == 422 and wrong.json()["field"] == "colour"
    with service.http(None) as anyone:
        assert anyone.post("/v1/decide", json={"context": [0, 0, 0, 0]}).status_code == 401


def small_model(folder):
    """A BatchIGL of the services' problem, fitted in a step and saved to ``folder``; it and
    the log it was fitted on."""
    from iglearn.data.logs import InteractionLog
    from iglearn.learners import BatchIGL
    from iglearn.learners.training import Optimisation

    rng = np.random.default_rng(0)
    log = InteractionLog(rng.normal(size=(200, D_X)), rng.integers(0, K, 200),
                         np.full(200, 1 / K), rng.normal(size=(200, D_Y)), K)
    settings = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, max_steps=1)
    with pytest.warns(UserWarning):
        learner = BatchIGL(seed=0, max_restarts=0, optimisation=settings).fit(log)
    save_model(learner, folder)
    return learner, log


def test_model_archive_round_trip(tmp_path):
    learner, log = small_model(tmp_path / "m")
    again = load_archive(pack_model(tmp_path / "m"))
    np.testing.assert_allclose(again.predict_proba(log.context[:5]),
                               learner.predict_proba(log.context[:5]), rtol=1e-6)
    with pytest.raises(IGLearnError, match="not a gzip"):
        load_archive(b"x" * 100)


@pytest.mark.parametrize("beyond", [False, True])
def test_requests_arriving_while_a_group_waits_share_its_commit(tmp_path, beyond):
    """A decide or feedback request that reaches the group commit within GATHER_TURNS turns
    of the event loop after the first joins its commit; one a turn later, or after the
    commit, gets one of its own; every request gets its own answer."""
    import asyncio

    from iglearn.service import app
    from iglearn.service.config import load_config
    from iglearn.service.process import write_config
    from iglearn.service.storage import Feedback

    from .conftest import tables

    service = app.Service(load_config(write_config(tmp_path / "service.toml", tables())),
                          insecure_no_auth=True)
    commits: list[tuple[int, int]] = []
    store = service.storage.add_interactions

    def counted(decisions, feedback, join_window):
        commits.append((len(decisions), len(feedback)))
        return store(decisions, feedback, join_window)

    service.storage.add_interactions = counted  # type: ignore[method-assign]
    group = app.GroupCommit(service)
    allowed = np.ones((1, K), dtype=bool)
    turns = app.GATHER_TURNS + int(beyond)

    def decide(i: int):
        return asyncio.ensure_future(group.decide(np.full((1, D_X), i, np.float32), [f"e{i}"],
                                                  allowed))

    async def arrivals() -> list:
        first = [decide(0)]
        for i in range(1, turns + 1):  # one request more in each turn
            await asyncio.sleep(0)
            first.append(decide(i))
        answers = await asyncio.gather(*first)
        later = await asyncio.gather(decide(9), group.add_feedback(
            Feedback("e0", np.ones(D_Y, np.float32), False, time.time())))
        return [*answers, *later]

    try:
        answers = asyncio.run(arrivals())
    finally:
        service.storage.close()
    grouped = [(app.GATHER_TURNS + 1, 0)] + [(1, 0)] * beyond
    assert app.GATHER_TURNS >= 1 and commits == [*grouped, (1, 1)]
    assert [d.event_id for (d,), _ in answers[:-1]] == [f"e{i}" for i in range(turns + 1)] \
        + ["e9"]
    assert [retried for _, retried in answers[:-1]] == [0] * (turns + 2)
    assert answers[-1] is FeedbackOutcome.JOINED


@pytest.mark.parametrize("algorithm", ["igl", "ai-igl"])
def test_a_service_learns_from_raw_measurements_with_far_values(database, tmp_path, algorithm):
    """Clients send what their sensors read: contexts around 35 with a spread of hundredths
    (voxel intensities) and dwell times in milliseconds, one of them an hour long in 1 % of
    the interactions. A re-fit on 600 of them (as an HTTP client sends them, played
    uniformly) serves a policy that picks the right action for most raw contexts, and the
    model it stores scales the dwell column that the far values dominate by its quartiles."""
    from .conftest import start_service

    running = start_service(tmp_path, database, model={"algorithm": algorithm, "learner": {}},
                            exploration={"mode": "e2g", "warmup": 10000})
    rng = np.random.default_rng(0)
    try:
        with running.http() as http, running.http("admin") as admin:
            for i in range(600):
                x = rng.normal(size=D_X)
                decision = http.post("/v1/decide", json={"context": (35 + 0.05 * x).tolist()})
                right = decision.json()["action"] == int(np.argmax(x[:K]))
                dwell = rng.normal(20000, 3000) if right else rng.normal(2000, 500)
                y = [dwell, 80 + 10 * rng.normal(), 400 * right + 50 * rng.normal()]
                if i % 100 == 7:
                    y[0] = float(rng.uniform(1e6, 4e6))  # a tab left open for up to an hour
                answer = http.post("/v1/feedback", json={"event_id": decision.json()["event_id"],
                                                         "feedback": y})
                assert answer.status_code == 204, answer.text
            refit = admin.post("/v1/model/refit?wait=120")
            assert refit.status_code == 200, refit.text
            learner = load_archive(admin.get("/v1/model/export").content)
    finally:
        running.stop()
    assert learner.standardiser_.feedback_outlying == (0,)
    x = rng.normal(size=(1000, D_X))
    accuracy = np.mean(learner.predict((35 + 0.05 * x).astype(np.float32))
                       == np.argmax(x[:, :K], axis=1))
    assert accuracy > 0.85, accuracy


def test_a_refused_context_value_is_named_by_its_configured_column(tmp_path):
    """With ``[model] context_names``, a 422 for a context value names the column (the JSON
    field stays the error's field); a length names the columns expected."""
    from .conftest import start_service

    names = ["age", "temp_c", "ms", "count"]
    running = start_service(tmp_path, model={"context_names": names})
    try:
        with running.http() as http:
            for body, field, says in [
                    ({"context": [1, "x", 3, 4]}, "context",
                     "context value 'temp_c' (entry 1) is not a number"),
                    ({"contexts": [[1, 2, 3, 4], [1, 2, None, 4]]}, "contexts[1]",
                     "context value 'ms' (entry 2) is not a number"),
                    ({"context": [1, 2, 3, 2e9]}, "context",
                     "context value 'count' (entry 3) is 2e+09, which exceeds ±1e+09"),
                    ({"context": [1, 2, 3, 1000000000.00001]}, "context",  # not "1e+09"
                     "context value 'count' (entry 3) is 1000000000.00001, which exceeds"),
                    ({"context": [[1, 2, 3, 4]]}, "context",
                     "holds lists, not numbers; it must be one list of 4 ('age', 'temp_c', 'ms', "
                     "'count') numbers; several contexts go in 'contexts'"),
                    ({"context": [1, 2, 3]}, "context",
                     "has 3 values; the service expects 4 ('age', 'temp_c', 'ms', 'count')")]:
                refused = http.post("/v1/decide", json=body)
                assert refused.status_code == 422 and refused.json()["field"] == field
                assert refused.json()["error"].startswith(says), refused.text
            for raw, field in [(b'{"context": [NaN, 1, 2, 3]}', "context"),
                               (b'{"contexts": [[0, 1, 2, 3], [1e400, 1, 2, 3]]}', "contexts")]:
                refused = http.post("/v1/decide", content=raw)
                assert refused.status_code == 422 and refused.json()["field"] == field
                assert "(context value 'age') holds" in refused.json()["error"], refused.text
            fine = http.post("/v1/decide", json={"context": [1, 2, 3, 4]})
            assert fine.status_code == 200, fine.text
    finally:
        running.stop()


def test_a_context_may_be_sent_by_name_in_any_order(tmp_path):
    """With ``[model] context_names`` a context may be a JSON object keyed by the names, in
    any order, as a client holding a record of named fields sends it: the decision, and the
    context stored with it, are those of the list in the names' order; a missing or unknown
    name is a 422 naming it."""
    from .conftest import start_service

    names = ["age", "temp_c", "ms", "count"]
    running = start_service(tmp_path, model={"context_names": names})
    try:
        with running.http() as http:
            listed = [0.5, -1.0, 2.0, 3.0]
            named = dict(reversed(list(zip(names, listed, strict=True))))
            by_list = http.post("/v1/decide", json={"context": listed, "event_id": "a"}).json()
            by_name = http.post("/v1/decide", json={"context": named, "event_id": "a"})
            assert by_name.status_code == 200, by_name.text  # a retry of the same decision
            assert by_name.json() == by_list
            batch = http.post("/v1/decide", json={"contexts": [named, listed],
                                                  "event_ids": ["b", "c"]}).json()
            assert [d["probabilities"] for d in batch["decisions"]] == [
                by_list["probabilities"]] * 2
            for body, field, says in [
                    ({"context": {**named, "agee": 1}}, "context",
                     "unknown context value 'agee'; the context's values are 'age', "
                     "'temp_c', 'ms', 'count'"),
                    ({"contexts": [listed, {"age": 1, "ms": 2}]}, "contexts[1]",
                     "misses 2 of the 4 context values ('temp_c', 'count'); send every one"),
                    ({"context": {**named, "ms": "x"}}, "context",
                     "context value 'ms' (entry 2) is not a number")]:
                refused = http.post("/v1/decide", json=body)
                assert refused.status_code == 422 and refused.json()["field"] == field
                assert refused.json()["error"] == says, refused.text
    finally:
        running.stop()


def test_a_feedback_may_be_sent_by_name_and_is_stored_as_its_vector(tmp_path):
    """With ``[model] feedback_names`` a feedback may be a JSON object of its values by name,
    in any order, as a recommender records its implicit signals: it is stored as the vector
    in the names' order; a refused value is named by its name."""
    from .conftest import start_service

    names = ["dwell_ms", "clicked", "scrolled"]
    running = start_service(tmp_path, model={"feedback_names": names})
    try:
        with running.http() as http:
            for eid in ("a", "b", "c"):
                assert http.post("/v1/decide", json={"context": [0, 0, 0, 1],
                                                     "event_id": eid}).status_code == 200
            sent = {"scrolled": 0.0, "dwell_ms": 3400.0, "clicked": 1.0}
            stored = http.post("/v1/feedback", json={"event_id": "a", "feedback": sent})
            assert stored.status_code == 204, stored.text
            assert http.post("/v1/feedback", json={"event_id": "b",
                                                   "feedback": [3400.0, 1.0, 0.0]}
                             ).status_code == 204
            for body, says in [
                    ({"event_id": "c", "feedback": {**sent, "clicks": 1}},
                     "unknown feedback value 'clicks'; the feedback's values are 'dwell_ms', "
                     "'clicked', 'scrolled'"),
                    ({"event_id": "c", "feedback": {"dwell_ms": 1}},
                     "misses 2 of the 3 feedback values ('clicked', 'scrolled'); send every "
                     "one"),
                    ({"event_id": "c", "feedback": [1, True, 0]},
                     "feedback value 'clicked' (entry 1) is not a number")]:
                refused = http.post("/v1/feedback", json=body)
                assert refused.status_code == 422 and refused.json()["field"] == "feedback"
                assert refused.json()["error"] == says, refused.text
            raw = http.post("/v1/feedback", content=b'{"event_id": "c", "feedback": [1, NaN, 0]}')
            assert raw.status_code == 422 and "(feedback value 'clicked')" in raw.json()["error"]
        rows = running.storage().joined()
        by_id = dict(zip(rows.event_id, rows.feedback.tolist(), strict=True))
        assert by_id["a"] == by_id["b"] == [3400.0, 1.0, 0.0]
    finally:
        running.stop()


def test_a_context_by_name_without_configured_names_is_refused_with_the_setting(service):
    with service.http() as http:
        refused = http.post("/v1/decide", json={"context": {"a": 0, "b": 0, "c": 0, "d": 1}})
        assert refused.status_code == 422 and refused.json()["field"] == "context"
        assert refused.json()["error"] == ("must be a list of 4 numbers; a context by name (a "
                                           "JSON object) needs [model] context_names")


def test_context_and_contexts_together_are_refused_naming_both(service):
    with service.http() as http:
        both = http.post("/v1/decide", json={"context": [0, 0, 0, 1],
                                             "contexts": [[0, 0, 0, 1]]})
        assert both.status_code == 422 and both.json()["field"] == "context"
        assert both.json()["error"] == ("the body has both context and contexts; send one of "
                                        "the two: context for one decision, contexts for a "
                                        "batch")
        single_id = http.post("/v1/decide", json={"contexts": [[0, 0, 0, 1]], "event_id": "e"})
        assert single_id.status_code == 422 and single_id.json()["field"] == "event_id"
        assert "takes event_ids, one per context" in single_id.json()["error"]


def metric_values(admin, *names: str) -> list[float]:
    """The values of unlabelled metrics, read from GET /metrics."""
    samples = dict(line.split(" ") for line in admin.get("/metrics").text.splitlines()
                   if not line.startswith("#"))
    return [float(samples[name]) for name in names]


def test_idempotent_retries_are_not_counted_as_decisions(service):
    """A decide sent again under a stored event id is answered with the stored decision:
    counted in iglearn_decision_retries_total, not in iglearn_decisions_total (nor its
    exploration); the new decisions of a batch holding a retry are counted."""
    names = ("iglearn_decisions_total", "iglearn_decision_retries_total",
             "iglearn_decisions_explored_total")
    same, fresh = f"retry-{uuid.uuid4().hex}", f"fresh-{uuid.uuid4().hex}"
    with service.http() as http, service.http("admin") as admin:
        before = metric_values(admin, *names)
        for _ in range(3):
            answer = http.post("/v1/decide", json={"context": [1, 1, 1, 1], "event_id": same})
            assert answer.status_code == 200, answer.text
        batch = http.post("/v1/decide", json={"contexts": [[1, 1, 1, 1], [2, 2, 2, 2]],
                                              "event_ids": [same, fresh]})
        assert batch.status_code == 200, batch.text
        after = metric_values(admin, *names)
    decisions, retries, explored = (a - b for a, b in zip(after, before, strict=True))
    assert (decisions, retries) == (2, 3)
    assert 0 <= explored <= 2


def test_a_decision_refused_409_is_not_counted_as_a_retry(service):
    """iglearn_decision_retries_total counts decisions answered with the one stored under
    their event id; a decision refused 409 (another context, or actions excluding the stored
    action, under a stored event id) is no retry, nor is anything of a batch refused 409,
    whose new decisions are stored and counted as decisions."""
    names = ("iglearn_decisions_total", "iglearn_decision_retries_total")
    reused, kept, fresh = (f"{what}-{uuid.uuid4().hex}" for what in ("reused", "kept", "fresh"))
    with service.http() as http, service.http("admin") as admin:
        before = metric_values(admin, *names)
        first = http.post("/v1/decide", json={"context": [1, 1, 1, 1], "event_id": reused})
        assert first.status_code == 200, first.text
        assert http.post("/v1/decide", json={"context": [2, 2, 2, 2],
                                             "event_id": kept}).status_code == 200
        excluded = [a for a in range(K) if a != first.json()["action"]]
        for body in ({"context": [1, 1, 1, 2], "event_id": reused},
                     {"context": [1, 1, 1, 1], "event_id": reused, "actions": excluded},
                     {"contexts": [[3, 3, 3, 3], [2, 2, 2, 2], [1, 1, 1, 2]],
                      "event_ids": [fresh, kept, reused]}):
            answer = http.post("/v1/decide", json=body)
            assert answer.status_code == 409, answer.text
        assert metric_values(admin, *names) == [before[0] + 3, before[1]]
        assert http.post("/v1/decide", json={"context": [1, 1, 1, 1],
                                             "event_id": reused}).status_code == 200
        assert metric_values(admin, *names) == [before[0] + 3, before[1] + 1]


def test_a_path_taking_several_methods_lists_every_one_in_allow(service):
    """/v1/model takes GET (the served model) and PUT (an import): another method's 405
    lists both (it listed GET and HEAD only, the first of two routes of one path), and each
    method still reaches its own endpoint."""
    with service.http() as http:
        for method in ("POST", "DELETE", "PATCH"):
            wrong = http.request(method, "/v1/model")
            assert wrong.status_code == 405, wrong.text
            assert wrong.headers["allow"] == "GET, HEAD, PUT"
            assert wrong.json() == {"error": f"/v1/model does not take {method}; it takes "
                                             f"GET, HEAD, PUT", "field": "method"}
        assert http.get("/v1/model").status_code == 200
        assert http.head("/v1/model").status_code == 200
        refused = http.put("/v1/model", content=b"x")  # the import, which needs an admin key
        assert refused.status_code == 403 and "admin key" in refused.json()["error"]
        assert http.get("/v1/model/export").status_code == 403  # its own route still


def test_a_trailing_slash_is_an_unknown_path_not_a_redirect(service):
    """An endpoint's path with a slash added is answered as any unknown path is, 404 in the
    service's JSON naming it (it was a bare 307 redirect, no JSON, to the path without the
    slash)."""
    with service.http() as http:
        for method, path in (("POST", "/v1/decide/"), ("POST", "/v1/feedback/"),
                             ("GET", "/v1/model/"), ("PUT", "/v1/model/"),
                             ("GET", "/healthz/"), ("GET", "/metrics/")):
            answer = http.request(method, path, json={"context": [0, 0, 0, 0]})
            assert answer.status_code == 404, (method, path, answer.status_code)
            assert answer.headers["content-type"] == "application/json"
            assert answer.json() == {"error": f"no endpoint {path}; the endpoints are under "
                                              f"/v1, /healthz, /readyz and /metrics",
                                     "field": "path"}


def test_a_whole_number_sent_as_a_float_is_named_as_not_an_integer(service):
    """An action index or a model version sent as ``1.0`` (a client that holds every number
    as a float, numpy's float64 in Python's json) is refused naming the field and saying it
    is no integer; it was "1.0 is not an action index in [0, 3)" and "1.0 is not a stored
    version ([1, 2])", which it seemed to be."""
    with service.http() as http:
        answer = http.post("/v1/decide", json={"context": [0.1, 0.2, 0.3, 0.4],
                                               "actions": [0, 1.0]})
        assert answer.status_code == 422 and answer.json()["field"] == "actions"
        assert answer.json()["error"] == "1.0 is not an integer; send an action index as one " \
                                         "(1, not 1.0)"
    with service.http("admin") as admin:
        answer = admin.post("/v1/model/rollback", json={"version": 1.0})
        assert answer.status_code == 422 and answer.json()["field"] == "version"
        assert answer.json()["error"] == "1.0 is not an integer; send a version as one " \
                                         "(1, not 1.0)"


def test_a_compressed_json_body_is_refused_415_naming_content_encoding(service):
    """A JSON body sent gzip-compressed (``Content-Encoding: gzip``, as some HTTP clients
    send large bodies) is answered 415 naming the header, nothing stored; it was a 422 that
    called the body "not UTF-8 text". ``identity`` is plain JSON, served as ever."""
    import gzip
    import json

    eid = uuid.uuid4().hex
    context = {"context": [0.1, 0.2, 0.3, 0.4], "event_id": eid}
    with service.http() as http:
        for path, body in (("/v1/decide", context),
                           ("/v1/feedback", {"event_id": eid, "feedback": [1, 0, 0]})):
            answer = http.post(path, content=gzip.compress(json.dumps(body).encode()),
                               headers={"content-type": "application/json",
                                        "content-encoding": "gzip"})
            assert answer.status_code == 415, (path, answer.text)
            assert answer.json()["field"] == "content-encoding"
            assert "gzip" in answer.json()["error"] and "uncompressed" in answer.json()["error"]
        assert http.post("/v1/feedback", json={"event_id": eid, "feedback": [1, 0, 0]}
                         ).status_code == 404  # the decision was not stored
        answer = http.post("/v1/decide", content=json.dumps(context).encode(),
                           headers={"content-encoding": "identity"})
        assert answer.status_code == 200 and answer.json()["event_id"] == eid


def test_a_form_encoded_body_is_refused_415_saying_to_send_json(service):
    """An HTML form's body (``curl --data-urlencode 'context=[...]'``) was a 422 "the body:
    not valid JSON (Expecting value at line 1 column 1)", with nothing saying why; it is now a
    415 naming ``content-type`` and what to send. A JSON body sent with a form's content type
    (curl's ``-d`` declares it for any body) is read as JSON, as before."""
    import json

    eid = uuid.uuid4().hex
    with service.http() as http:
        for kind, body in (("application/x-www-form-urlencoded",
                            "context=%5B0.1%2C0.2%2C0.3%2C0.4%5D"),
                           ("multipart/form-data; boundary=x",
                            '--x\r\nContent-Disposition: form-data; name="context"\r\n\r\n'
                            '[0.1,0.2,0.3,0.4]\r\n--x--\r\n')):
            answer = http.post("/v1/decide", content=body.encode(),
                               headers={"content-type": kind})
            assert answer.status_code == 415 and answer.json() == {
                "error": f"the body is {kind.split(';')[0]} (Content-Type: "
                         f"{kind.split(';')[0]}), where this endpoint reads a JSON object; "
                         f"send JSON with Content-Type: application/json (curl: --json "
                         f"'{{...}}')", "field": "content-type"}, answer.text
        context = {"context": [0.1, 0.2, 0.3, 0.4], "event_id": eid}
        answer = http.post("/v1/decide", content=json.dumps(context).encode(),
                           headers={"content-type": "application/x-www-form-urlencoded"})
        assert answer.status_code == 200 and answer.json()["event_id"] == eid
        broken = http.post("/v1/decide", content=b'{"context": [0.1,',
                           headers={"content-type": "application/json"})
        assert broken.status_code == 422 and broken.json()["field"] == "body"


def test_unknown_paths_wrong_methods_and_internal_errors_answer_in_json(tmp_path):
    import sqlite3

    running = start_service(tmp_path)
    try:
        with running.http() as client:
            wrong = client.get("/v1/decide")
            assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
            assert wrong.headers["content-type"] == "application/json"
            assert wrong.json()["field"] == "method" and "POST" in wrong.json()["error"]
            missing = client.post("/v1/nothing", json={})
            assert missing.status_code == 404 and missing.json()["field"] == "path"
            assert "/v1/nothing" in missing.json()["error"]
            # an error the service does not expect (its table dropped under it): a 500 in
            # JSON, on the direct way of decisions and on Starlette's way alike
            with sqlite3.connect(tmp_path / "service.db") as db:
                db.execute("DROP TABLE interactions")
            for answer in (client.post("/v1/decide", json={"context": [0.1] * D_X}),
                           running.http("admin").get("/v1/log")):
                assert answer.status_code == 500, answer.text
                assert answer.headers["content-type"] == "application/json"
                assert "internal error" in answer.json()["error"], answer.text
    finally:
        running.stop()
