"""Makes iglearn's coba learners known to coba by name (``iglearn.E2G``, ``iglearn.Uniform``),
for coba's JSON experiment files; coba imports this module through the ``coba.register``
entry point."""

from coba.registry import CobaRegistry

from iglearn.integrations.coba import E2GLearner, UniformIGLLearner

CobaRegistry.register("iglearn.E2G", E2GLearner)
CobaRegistry.register("iglearn.Uniform", UniformIGLLearner)
