"""scikit-learn's parameter protocol on every batch learner: ``get_params`` and
``set_params`` (so that ``sklearn.base.clone`` and parameter searches take a learner), with
and without scikit-learn installed."""

import copy
import dataclasses
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from iglearn import AIIGL, VIIGL, BatchIGL, ContextualBandit, IGLearnError, Supervised
from iglearn.envs import digits_environment
from iglearn.learners import Optimisation
from iglearn.learners.iglp import IGLP
from iglearn.learners.settings import AIIGL_OPTIMISATION
from iglearn.learners.unsupervised import UnsupervisedBandit

QUICK = Optimisation(grounding_epochs=1, policy_epochs=1, epochs=1, max_steps=60)
LEARNERS = [BatchIGL, AIIGL, IGLP, VIIGL, ContextualBandit, Supervised]
IDS = [cls.__name__ for cls in LEARNERS]
OWN_BAD = {BatchIGL: {"starts": 0}, AIIGL: {"max_restarts": -1}, IGLP: {"threshold": 0.5},
           VIIGL: {"beta": 0.0}, ContextualBandit: {"standardise": "on", "same_unit": "pixels"},
           Supervised: {"optimisation": None, "threads": -1}}
"""A value of a setting of each learner's own that its constructor refuses."""


@pytest.fixture(scope="module")
def log():
    return digits_environment().log(600, np.random.default_rng(0))


def _clone(learner):
    """What ``sklearn.base.clone`` does, without scikit-learn: a new learner of the same
    class from a deep copy of each setting, each of which it must keep as given."""
    given = {name: copy.deepcopy(value) for name, value in learner.get_params(deep=False).items()}
    clone = type(learner)(**given)
    kept = clone.get_params(deep=False)
    assert all(kept[name] is value for name, value in given.items())
    return clone


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_get_params_gives_the_settings_the_constructor_takes(cls):
    learner = cls(seed=3)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    params = learner.get_params(deep=False)
    assert list(params) == names and params["seed"] == 3
    assert all(params[name] is getattr(learner, name) for name in names)
    deep = learner.get_params()
    assert {k: v for k, v in deep.items() if "__" not in k} == params
    optimisation = learner.optimisation
    assert {k: v for k, v in deep.items() if "__" in k} == {
        f"optimisation__{f.name}": getattr(optimisation, f.name)
        for f in dataclasses.fields(optimisation)}


def test_fitted_attributes_are_not_settings(log):
    learner = ContextualBandit(seed=0, optimisation=QUICK).fit(log)
    assert not [name for name in learner.get_params() if name.endswith("_")]
    assert learner.get_params() == ContextualBandit(seed=0, optimisation=QUICK).get_params()


def test_a_learner_with_its_own_init_gives_the_settings_its_init_takes():
    learner = UnsupervisedBandit(n_clusters=3, seed=1)
    assert learner.get_params() == {"n_clusters": 3, "method": "gmm", "rule": "smallest",
                                    "policy": "linear", "optimisation": None, "seed": 1,
                                    "threads": 1}
    assert learner.set_params(n_clusters=4, optimisation=QUICK) is learner
    assert learner.get_params()["optimisation__lr"] == QUICK.lr and learner.n_clusters == 4
    with pytest.raises(IGLearnError, match="threads"):
        learner.set_params(n_clusters=5, threads=0)
    assert learner.n_clusters == 4 and learner.threads == 1


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_set_params_sets_settings_and_nested_optimisation_settings(cls):
    learner = cls(seed=0)
    defaults = learner.optimisation
    assert learner.set_params(seed=5, threads=2, optimisation__lr=0.125) is learner
    assert (learner.seed, learner.threads) == (5, 2)
    assert learner.optimisation == dataclasses.replace(defaults, lr=0.125)  # others kept
    assert learner.get_params()["optimisation__lr"] == 0.125
    assert learner.set_params() is learner and learner.seed == 5
    # a whole optimisation first, then a value of it
    learner.set_params(optimisation=QUICK, optimisation__epochs=4)
    assert learner.optimisation == dataclasses.replace(QUICK, epochs=4)


def test_a_nested_setting_keeps_the_learners_own_optimisation_defaults():
    learner = AIIGL().set_params(optimisation__lr=0.01)
    assert learner.optimisation == dataclasses.replace(AIIGL_OPTIMISATION, lr=0.01)
    assert learner.optimisation.max_steps == 120  # AI-IGL's, not Optimisation()'s 240


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_an_unknown_setting_is_refused_in_one_line_naming_the_settings(cls):
    learner = cls(seed=0)
    before = learner.get_params()
    with pytest.raises(IGLearnError, match=f"^{cls.__name__} has no setting 'sed'; its "
                                           f"settings: .*seed.*optimisation__NAME") as caught:
        learner.set_params(threads=2, sed=1)
    assert "\n" not in str(caught.value)
    with pytest.raises(IGLearnError, match="'lr': it is a setting of its optimisation; pass "
                                           "optimisation__lr=..."):
        learner.set_params(lr=0.1)
    with pytest.raises(IGLearnError, match="optimisation has no setting 'lrr'; its settings: "
                                           "grounding_epochs, .*lr"):
        learner.set_params(optimisation__lrr=0.1)
    with pytest.raises(IGLearnError, match="setting 'seed' is 0, which has no settings of its "
                                           "own to set by seed__NAME; pass seed=... whole"):
        learner.set_params(seed__x=1)
    assert learner.get_params() == before


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_a_refused_value_leaves_the_learner_as_it_was(cls):
    """Checked as construction checks them, all or nothing: nothing is half-set."""
    learner = cls(seed=0)
    before = learner.get_params()
    for bad in ({"threads": 2, "seed": -1}, {"seed": 4, "standardise": "sometimes"},
                {"threads": 2, "optimisation__lr": -1.0},
                {"seed": 4, "policy": "tree"}, OWN_BAD[cls]):
        with pytest.raises(IGLearnError):
            learner.set_params(**bad)
        assert learner.get_params() == before, bad


def test_settings_checked_together_are_checked_together():
    """IGL-P refuses contexts in one unit when they begin with a user id's one-hot features,
    whichever of the two settings changes."""
    learner = IGLP(users=2)
    with pytest.raises(IGLearnError, match="same_unit='context' names the contexts"):
        learner.set_params(same_unit="context")
    assert learner.same_unit == "none"
    learner.set_params(users=0, same_unit="context")
    assert (learner.users, learner.same_unit) == (0, "context")


def test_a_fitted_learner_keeps_its_fit_when_its_settings_change(log):
    learner = ContextualBandit(seed=0, optimisation=QUICK).fit(log)
    policy = learner.policy_
    learner.set_params(threads=2)
    assert learner.policy_ is policy and learner.threads == 2
    iglp = IGLP()
    iglp.posterior_ = marker = object()  # IGL-P's constructor sets it to None
    iglp.set_params(threshold=4.0)
    assert iglp.posterior_ is marker and iglp.threshold == 4.0


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_a_clone_is_an_unfitted_learner_with_equal_settings(cls):
    learner = cls(seed=7, threads=2)
    learner.policy_ = object()  # as if fitted
    clone = _clone(learner)
    assert type(clone) is cls and not hasattr(clone, "policy_")
    assert clone.get_params() == learner.get_params()


def test_a_clone_of_a_learner_seeded_with_a_generator_draws_from_a_copy(log):
    """A deep copy in the state the learner's Generator had: the clone fits as the learner
    would, and the two never share a Generator."""
    learner = ContextualBandit(seed=np.random.default_rng(5), optimisation=QUICK)
    clone = _clone(learner)
    assert clone.seed is not learner.seed
    assert clone.seed.bit_generator.state == learner.seed.bit_generator.state
    ContextualBandit.fit_many([learner, clone], [log, log])  # not one shared Generator
    np.testing.assert_allclose(clone.predict_proba(log.context[:50]),
                               learner.predict_proba(log.context[:50]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("cls", LEARNERS, ids=IDS)
def test_scikit_learns_clone_takes_every_learner(cls, log):
    base = pytest.importorskip("sklearn.base")
    learner = cls(seed=np.random.default_rng(2), optimisation=QUICK)
    learner.policy_ = object()
    clone = base.clone(learner)
    assert type(clone) is cls and not hasattr(clone, "policy_")
    assert clone.seed is not learner.seed
    assert clone.seed.bit_generator.state == learner.seed.bit_generator.state
    assert ({k: v for k, v in clone.get_params().items() if k != "seed"}
            == {k: v for k, v in learner.get_params().items() if k != "seed"})


def test_a_scikit_learn_parameter_grid_sets_a_learners_settings(log):
    selection = pytest.importorskip("sklearn.model_selection")
    base = pytest.importorskip("sklearn.base")
    grid = selection.ParameterGrid({"optimisation__lr": [0.01, 0.05], "standardise": ["on"]})
    template = Supervised(seed=0, optimisation=QUICK)
    fitted = [base.clone(template).set_params(**params).fit(log) for params in grid]
    assert [m.optimisation.lr for m in fitted] == [0.01, 0.05]
    assert all(m.optimisation.epochs == QUICK.epochs and m.standardise == "on" for m in fitted)
    assert template.optimisation is QUICK and not hasattr(template, "policy_")


def test_the_protocol_needs_no_scikit_learn(tmp_path):
    """With scikit-learn unimportable, iglearn imports, and get_params, set_params and a
    clone by hand work."""
    code = textwrap.dedent("""
        import copy, sys
        sys.modules["sklearn"] = None  # import sklearn now raises ImportError
        from iglearn import BatchIGL
        learner = BatchIGL(seed=1).set_params(max_restarts=1, optimisation__lr=0.5)
        params = learner.get_params(deep=False)
        clone = BatchIGL(**copy.deepcopy(params))
        assert clone.get_params() == learner.get_params()
        assert clone.max_restarts == 1 and clone.optimisation.lr == 0.5
        assert not [m for m in sys.modules if m.startswith("sklearn.")]
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
