"""Makes iglearn's coba learners known to coba by name (``iglearn.E2G``, ``iglearn.IGLP``,
``iglearn.AIIGL``, ``iglearn.RegressionCB``, ``iglearn.Uniform``), for coba's JSON experiment
files; coba imports this module through the ``coba.register`` entry point."""

from coba.registry import CobaRegistry

from iglearn.integrations.coba import (
    AIIGLLearner,
    E2GLearner,
    IGLPLearner,
    RegressionCBLearner,
    UniformIGLLearner,
)

REGISTERED = {"iglearn.E2G": E2GLearner, "iglearn.IGLP": IGLPLearner,
              "iglearn.AIIGL": AIIGLLearner, "iglearn.RegressionCB": RegressionCBLearner,
              "iglearn.Uniform": UniformIGLLearner}
"""coba's names of iglearn's learners."""

for _name, _learner in REGISTERED.items():
    CobaRegistry.register(_name, _learner)
