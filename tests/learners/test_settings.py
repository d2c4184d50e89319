"""Settings of the batch learners (:mod:`iglearn.learners.settings`)."""

import copy
import pickle
from dataclasses import replace

import pytest

from iglearn import AIIGL, BatchIGL, ContextualBandit
from iglearn.learners.iglp import IGLP
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
