"""iglearn.learners.registry: the one registry of algorithms, and saving and loading
through it."""

import numpy as np
import pytest

from iglearn.learners import AIIGL, VIIGL, BatchIGL, ContextualBandit, load_model, save_model
from iglearn.learners.iglp import IGLP
from iglearn.learners.registry import algorithm_of, learner_class, learners
from iglearn.models.io import ALGORITHMS, LAYOUTS


def test_every_algorithm_has_a_learner_a_report_and_a_layout():
    assert tuple(learners()) == ALGORITHMS == tuple(LAYOUTS)
    for name, (cls, report) in learners().items():
        assert learner_class(name) is cls
        assert algorithm_of(cls()) == name
        assert report.__name__.endswith("Report")
    assert [learner_class(n) for n in ALGORITHMS] == [BatchIGL, AIIGL, IGLP, VIIGL]


def test_a_learner_no_folder_holds_is_named_in_the_refusal():
    with pytest.raises(TypeError, match="cannot hold a ContextualBandit; it holds one of "
                                        "BatchIGL, AIIGL, IGLP, VIIGL"):
        algorithm_of(ContextualBandit())


def test_saved_and_loaded_by_the_name_model_json_records(tmp_path):
    from iglearn.data.logs import InteractionLog

    rng = np.random.default_rng(0)
    n, k = 300, 3
    label = rng.integers(0, k, n)
    action = rng.integers(0, k, n)
    context = np.eye(k, dtype=np.float32)[label] + 0.1 * rng.normal(size=(n, k))
    feedback = np.eye(2, dtype=np.float32)[(action == label).astype(int)]
    log = InteractionLog(context=context.astype(np.float32), action=action,
                         probability=np.full(n, 1 / k), feedback=feedback, n_actions=k)
    learner = BatchIGL(seed=0).fit(log)
    save_model(learner, tmp_path / "m")
    again = load_model(tmp_path / "m")
    assert type(again) is BatchIGL and again.metadata_["algorithm"] == "igl"
    np.testing.assert_array_equal(again.predict(context), learner.predict(context))
    with pytest.raises(ValueError, match="holds an igl model \\(BatchIGL\\), not an ai-igl one"):
        load_model(tmp_path / "m", "ai-igl")
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; choose one of igl, ai-igl, "
                                         "igl-p, vi-igl"):
        load_model(tmp_path / "m", "nope")


def test_every_algorithm_learner_and_report_is_a_public_name_of_iglearn_learners():
    """``from iglearn.learners import IGLP`` (or any algorithm's learner or report) works, and
    each learner is the top-level package's name too, as BatchIGL is."""
    import iglearn
    import iglearn.learners as package
    from iglearn.learners.registry import learners

    for name, (learner, report) in learners().items():
        assert getattr(package, learner.__name__) is learner, name
        assert getattr(package, report.__name__) is report, name
        assert learner.__name__ in package.__all__ and report.__name__ in package.__all__
        assert getattr(iglearn, learner.__name__) is learner, name
        assert learner.__name__ in iglearn.__all__
    for name in (*package.__all__, *iglearn.__all__):  # every listed name resolves
        assert getattr(package if name in package.__all__ else iglearn, name) is not None
