"""Settings of the batch learners (:mod:`iglearn.learners.settings`)."""

import copy
import pickle
from dataclasses import replace

import numpy as np
import pytest

from iglearn import AIIGL, BatchIGL, ContextualBandit
from iglearn.data.stream import StreamSettings
from iglearn.errors import IGLearnError
from iglearn.learners.iglp import IGLP
from iglearn.learners.schedules import PaperSchedule, TheorySchedule
from iglearn.learners.settings import Optimisation, UnknownSettingError
from iglearn.learners.vi_igl import VIIGL


@pytest.mark.parametrize("learner", [BatchIGL, AIIGL, IGLP, VIIGL])
def test_an_optimisation_setting_given_to_a_learner_says_how_to_change_it(learner):
    """BatchIGL(lr=0.1) names where lr lives and a call that keeps the learner's own
    optimisation defaults (AI-IGL's differ from Optimisation()'s); the call it gives works."""
    name = learner.__name__
    with pytest.raises(UnknownSettingError,
                       match=rf"^{name} has no setting 'lr': it is a setting of its "
                             rf"optimisation; pass optimisation=dataclasses\.replace\("
                             rf"{name}\(\)\.optimisation, lr=\.\.\.\)"):
        learner(lr=0.1)
    made = learner(optimisation=replace(learner().optimisation, lr=0.1))
    assert made.optimisation.lr == 0.1
    assert replace(made.optimisation, lr=learner().optimisation.lr) == learner().optimisation


def test_a_misspelt_setting_names_the_closest_and_is_a_type_error():
    with pytest.raises(TypeError, match=r"ContextualBandit has no setting 'sed'; did you mean "
                                        r"'seed'\? help\(ContextualBandit\) lists"):
        ContextualBandit(sed=1)
    with pytest.raises(UnknownSettingError, match=r"Optimisation has no setting 'epoch'; did "
                                                  r"you mean 'epochs'\?"):
        Optimisation(epoch=3)
    with pytest.raises(UnknownSettingError, match=r"BatchIGL has no setting 'colour'; "
                                                  r"help\(BatchIGL\)"):
        BatchIGL(colour=1)


def test_settings_still_copy_pickle_and_replace():
    learner = BatchIGL(seed=3, optimisation=Optimisation(max_steps=40))
    for made in (copy.deepcopy(learner), pickle.loads(pickle.dumps(learner)),
                 replace(learner, seed=4)):
        assert made.optimisation.max_steps == 40
    assert replace(learner, seed=4).seed == 4


def test_a_subclass_with_an_init_of_its_own_takes_its_own_keywords():
    """The check reads a dataclass's fields; a subclass whose ``__init__`` takes other
    keywords is built as it says (it was refused: "MyIGL has no setting 'extra'")."""

    class MyIGL(BatchIGL):
        def __init__(self, extra: int = 1, **settings):
            super().__init__(**settings)
            self.extra = extra

    made = MyIGL(extra=2, seed=3)
    assert made.extra == 2 and made.seed == 3
    with pytest.raises(TypeError, match="'lr'"):
        MyIGL(lr=0.1)  # what its own __init__ passes on is Python's to refuse


@pytest.mark.parametrize(("make", "message"), [
    (lambda: BatchIGL(decoder_temperature=-0.1),
     "decoder_temperature must be a finite number > 0, got -0.1"),
    (lambda: BatchIGL(restart_threshold=float("nan")),
     "restart_threshold must be a finite number or None, got nan"),
    (lambda: BatchIGL(restart_threshold="0.1"), "restart_threshold must be a finite number"),
    (lambda: BatchIGL(corrector="no"), "corrector must be True or False, got 'no'"),
    (lambda: BatchIGL(flip_policy=0), "flip_policy must be True or False, got 0"),
    (lambda: BatchIGL(starts=0), r"starts must be a whole number >= 1 or None, got 0"),
    (lambda: Optimisation(lr=True), "lr must be a finite number > 0, got True"),
    (lambda: Optimisation(batch_size=True), "batch_size must be a whole number >= 1, got True"),
    (lambda: Optimisation(small_log=-1), "small_log must be a whole number >= 0, got -1"),
    (lambda: VIIGL(beta=0), "beta must be a finite number > 0, got 0"),
    (lambda: AIIGL(restart_fraction=-0.1), "restart_fraction must be a finite number >= 0"),
    (lambda: IGLP(threshold="x"), "threshold must be a finite number, got 'x'"),
    # it failed at fit with an AttributeError ('dict' object has no attribute 'max_steps')
    (lambda: BatchIGL(optimisation={"lr": 0.1}),
     r"optimisation must be an iglearn Optimisation, got dict \{'lr': 0.1\}; pass "
     r"optimisation=dataclasses\.replace\(BatchIGL\(\)\.optimisation, lr=\.\.\.\)"),
    (lambda: ContextualBandit().set_params(optimisation=0.1),
     "optimisation must be an iglearn Optimisation, got float 0.1"),
    (lambda: StreamSettings(block_rows=1.5), "block_rows must be a whole number >= 1, got 1.5"),
    (lambda: PaperSchedule(warmup_rounds="5"), "warmup must be a whole number >= 1, got '5'"),
    (lambda: TheorySchedule(iota=float("nan")), "iota must be a finite number > 0, got nan"),
])
def test_every_setting_is_checked_by_its_type_when_the_learner_is_made(make, message):
    """A value a setting's annotation does not admit is refused when the learner is made, in
    the words of its type; before, BatchIGL fitted and saved such values (a temperature of
    -0.1 at 60 % accuracy, "no" read as True) and its own model folder then failed to load."""
    with pytest.raises(IGLearnError, match=f"^{message}"):
        make()


@pytest.mark.parametrize("make, message", [
    (lambda: BatchIGL(seed=10**20), r"seed must be a whole number in \[0, 2\*\*63\)"),
    (lambda: BatchIGL(seed=2**63), r"seed must be a whole number in \[0, 2\*\*63\)"),
    (lambda: BatchIGL(max_restarts=10**20), r"max_restarts must be below 2\*\*63"),
    (lambda: Optimisation(small_log=2**63), r"small_log must be below 2\*\*63"),
])
def test_an_integer_a_model_cannot_record_is_refused_when_the_learner_is_made(make, message):
    """A model.json holds integers below 2**63; before, BatchIGL(seed=10**20) fitted and
    saved a model that its own reader then called damaged."""
    with pytest.raises(IGLearnError, match=f"^{message}"):
        make()
    assert BatchIGL(seed=2**63 - 1).seed == 2**63 - 1


def test_numpy_numbers_are_the_numbers_they_hold():
    """``np.int64(100)`` from ``np.arange`` is a whole number, stored as Python's; a bool is
    not a count."""
    optimisation = Optimisation(batch_size=np.int64(100), lr=np.float32(0.5))
    assert type(optimisation.batch_size) is int and optimisation.batch_size == 100
    assert type(optimisation.lr) is float and optimisation.lr == 0.5
    learner = BatchIGL(max_restarts=np.int64(2), corrector=np.bool_(False))
    assert type(learner.max_restarts) is int and learner.corrector is False
    assert Optimisation(lr=1).lr == 1.0
    assert BatchIGL(reference_confidence=float("inf")).reference_confidence == float("inf")
    assert StreamSettings(shuffle_rows=np.int32(8)).shuffle_rows == 8


def test_counts_given_outside_the_dataclasses_take_numpy_whole_numbers_alone():
    """The seed, the online learners' widths and intervals and the paper schedule's warm-up
    read a whole number as the settings do: numpy's is one, a bool or a fraction is not."""
    from iglearn.learners.e2g import E2G

    learner = E2G(3, np.int64(4), np.int32(2), update_every=np.int64(5),
                  holdout_every=np.uint8(4), seed=np.int64(7))
    assert learner.holdout_every == 4 and type(learner.holdout_every) is int
    assert PaperSchedule(warmup_rounds=np.int16(10)).warmup(3) == 10
    for make, name in [(lambda: E2G(3, 4, 2, seed=True), "seed"),
                       (lambda: E2G(3, 4.0, 2), "context_dim"),
                       (lambda: E2G(3, 4, np.bool_(True)), "feedback_dim"),
                       (lambda: E2G(3, 4, 2, update_every=True), "update_every"),
                       (lambda: E2G(3, 4, 2, holdout_every=2.0), "holdout_every"),
                       (lambda: PaperSchedule(warmup_rounds=True), "warmup")]:
        with pytest.raises(IGLearnError, match=f"^{name} must be"):
            make()
