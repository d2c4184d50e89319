"""A model refitted from the service's own log export is imported and decides as the same
log read from any export format: the DSJSON export (no schema sidecar, zeros not written)
keeps its columns in order, and a model whose columns are in another order is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from iglearn.data.formats import read_log
from iglearn.learners.registry import save_model
from iglearn.models.archive import load_archive, pack_model

from .conftest import D_X, play, start_service


def fit(log):
    """A short, seeded BatchIGL fit of ``log`` (the same log fits the same model)."""
    from iglearn.learners import BatchIGL
    from iglearn.learners.training import Optimisation

    settings = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, max_steps=3)
    with pytest.warns(UserWarning):
        return BatchIGL(seed=0, max_restarts=0, optimisation=settings).fit(log)


def test_a_model_refitted_from_the_dsjson_export_decides_as_from_the_npz_export(tmp_path):
    running = start_service(tmp_path)
    try:
        rng = np.random.default_rng(3)
        with running.http() as client:
            # the first logged context has a zero first column (written sparsely, x0 first
            # appears on a later line)
            first = client.post("/v1/decide", json={"context": [0.0, 1.0, -1.0, 0.5]}).json()
            assert client.post("/v1/feedback", json={"event_id": first["event_id"],
                                                     "feedback": [0.0, 1.0, 0.0]}
                               ).status_code == 204
            play(client, 80, rng)
        with running.http("admin") as admin:
            learners = {}
            for fmt in ("npz", "dsjson"):
                response = admin.get(f"/v1/log?format={fmt}")
                assert response.status_code == 200, response.text
                path = tmp_path / f"log.{fmt}"
                path.write_bytes(response.content)
                learners[fmt] = fit(read_log(path))
            contexts = rng.normal(size=(50, D_X))
            expected = learners["npz"].predict_proba(contexts)
            np.testing.assert_allclose(learners["dsjson"].predict_proba(contexts), expected,
                                       rtol=1e-5, atol=1e-6)
            save_model(learners["dsjson"], tmp_path / "m")
            imported = admin.put("/v1/model", content=pack_model(tmp_path / "m"))
            assert imported.status_code == 201, imported.text
            served = load_archive(admin.get("/v1/model/export").content)
            np.testing.assert_allclose(served.predict_proba(contexts), expected,
                                       rtol=1e-5, atol=1e-6)
            # a model whose positional columns are in another order is refused, naming them
            versions = admin.get("/v1/model").json()["versions"]
            shuffled = learners["dsjson"]
            schema = shuffled.schema_
            assert schema.context == tuple(f"x^x{i}" for i in range(D_X))
            for kind, letter in (("context", "x"), ("feedback", "y")):
                names = getattr(schema, kind)
                shuffled.schema_ = dataclasses.replace(schema, **{kind: names[1:] + names[:1]})
                save_model(shuffled, tmp_path / kind)
                refused = admin.put("/v1/model", content=pack_model(tmp_path / kind))
                assert refused.status_code == 422, refused.text
                error = refused.json()
                assert error["field"] == f"{kind}_names", error
                assert f"its column 0 is '{letter}^{letter}1'" in error["error"], error
            assert admin.get("/v1/model").json()["versions"] == versions  # nothing stored
    finally:
        running.stop()
