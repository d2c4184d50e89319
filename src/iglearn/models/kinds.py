"""The names model folders record for the model classes, without the classes (which import
torch): what :mod:`iglearn.models.io` checks a ``model.json`` against before anything builds
a model."""

from __future__ import annotations

from iglearn.learners.settings import DECODER_KINDS, POLICY_KINDS

CUSTOM = "custom"
"""The class name a model folder records for a user's own module
(:mod:`iglearn.models.custom`)."""
PERSONAL = "personal"
"""The class name of IGL-P's per-user grounding
(:class:`~iglearn.models.personal.PersonalIK`)."""
HIDDEN = frozenset({"mlp"})
"""The built-in policy and decoder classes with a hidden layer (their record has
``hidden``)."""
IK_KINDS = (*POLICY_KINDS, PERSONAL)
"""The classes of IGL-P's inverse-kinematics record ``ik``: a policy class on the features
(x, y, x (x) y), or per-user grounding on (x, y)."""
POSTERIOR_KINDS = ("linear",)
"""The class of IGL-P's feedback posterior record ``posterior``: linear on (u, y, u (x) y)
(:func:`~iglearn.learners.iglp.fit_feedback_posterior`)."""

__all__ = ["CUSTOM", "DECODER_KINDS", "HIDDEN", "IK_KINDS", "PERSONAL", "POLICY_KINDS",
           "POSTERIOR_KINDS"]
