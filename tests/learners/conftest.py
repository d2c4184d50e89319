"""Logs shared by the learners' tests."""

import numpy as np
import pytest

from iglearn import InteractionLog


def _wide_log(n: int, d: int, seed: int = 0) -> InteractionLog:
    """n uniform interactions, K = 10, of d binary context and feedback features (images of a
    prototype per label, 5 % of pixels flipped; the feedback lights its first 200 features
    when rewarded, a fifth of the others at random)."""
    rng = np.random.default_rng(seed)
    k = 10
    label, action = rng.integers(0, k, n), rng.integers(0, k, n)
    reward = action == label
    prototype = rng.random((k, d)) < 0.2
    context = (prototype[label] ^ (rng.random((n, d)) < 0.05)).astype(np.float32)
    feedback = (rng.random((n, d)) < 0.2) | reward[:, None] & (np.arange(d) < 200)
    return InteractionLog(context=context, action=action, probability=np.full(n, 1 / k),
                          feedback=feedback.astype(np.float32), n_actions=k, label=label)


@pytest.fixture
def wide_log():
    """A factory of small logs with many binary features: ``wide_log(n, d)``."""
    return _wide_log
