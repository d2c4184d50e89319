"""The inverse-kinematics model of IGL-P when each user's feedback has its own meaning
(:class:`~iglearn.learners.iglp.IGLP`'s ``users`` setting)."""

from __future__ import annotations

import torch
from torch import nn

from iglearn.models.init import reset_parameters
from iglearn.models.kinds import PERSONAL
from iglearn.models.policies import POLICIES, make_policy

USER_RANK = 2
"""Width of the user and feedback embeddings of :class:`PersonalIK` (the IGL-P paper's coba
experiment uses 2)."""


class PersonalIK(nn.Module):
    """The scores of the inverse-kinematics model h(a | x, y) when each user's feedback has its
    own meaning (:class:`~iglearn.learners.iglp.IGLP`'s ``users`` setting): s(u, y) g(x') on
    the input (x, y, x (x) y) of :func:`~iglearn.learners.iglp.ik_features`, where the context
    x = (u, x') starts with the user's ``users`` features u, s(u, y) = <E u + e, F y + f>
    (embeddings of width :data:`USER_RANK`) is how telling feedback y is from user u, and
    g(x') the action scores of the rest of the context (a ``model`` network, 'linear' or
    'mlp', shared by all users and words).

    A word user u says only after the best action gets a large s(u, y), so h concentrates on
    the action g ranks first; a word said after any other action gets s near 0, h near
    uniform. The same word may be telling from one user and uninformative from another, which
    a model of (x, y, x (x) y) cannot express when half the users swap good and bad words: it
    sees every word after the best action as often as after any other. This is the bilinear
    model of the IGL-P paper's coba experiment (there on random Fourier features of x').

    With a ``generator`` the weights are drawn from it; without one (a model folder being
    read, whose weights are loaded next), torch's own initialisation stands. ``hidden``: the
    hidden width of an 'mlp' ``model`` (its default when None)."""

    kind = PERSONAL

    def __init__(self, context_dim: int, feedback_dim: int, users: int, n_actions: int,
                 model: str, generator: torch.Generator | None = None,
                 hidden: int | None = None):
        super().__init__()
        self.dims = (context_dim, feedback_dim, users)
        self.model = model
        if generator is None:
            options = {} if hidden is None else {"hidden": hidden}
            self.context = POLICIES[model](context_dim - users, n_actions, **options).net
        else:
            self.context = make_policy(model, context_dim - users, n_actions, generator).net
        self.user = nn.Linear(users, USER_RANK)
        self.feedback = nn.Linear(feedback_dim, USER_RANK)
        if generator is not None:
            reset_parameters(self, generator)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Scores (..., K) of rows that begin with (x, y):
        :func:`~iglearn.learners.iglp.ik_features` rows (..., d_x + d_y + d_x d_y) or
        :func:`~iglearn.learners.iglp.ik_rows` rows (..., d_x + d_y)."""
        d_x, d_y, users = self.dims
        user, rest = features[..., :users], features[..., users:d_x]
        telling = (self.user(user) * self.feedback(features[..., d_x:d_x + d_y])).sum(
            -1, keepdim=True)
        return telling * self.context(rest)

    @property
    def hidden(self) -> int | None:
        """The hidden width of the context network (None for a linear one)."""
        layers = [m for m in self.context.modules() if isinstance(m, nn.Linear)]
        return layers[0].out_features if len(layers) > 1 else None
