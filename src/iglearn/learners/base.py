"""What every policy learner offers once fitted: probabilities, greedy actions, accuracy."""

from __future__ import annotations

import numpy as np
import torch

from iglearn.errors import IGLearnError
from iglearn.models import Policy

_CHUNK = 65536


def as_tensor(array: np.ndarray) -> torch.Tensor:
    """A float32 torch view of a numpy array (no copy when already float32)."""
    return torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32))


class PolicyLearner:
    """Shared behaviour of learners that end with a fitted policy ``policy_``."""

    policy_: Policy

    def _fitted_policy(self) -> Policy:
        policy = getattr(self, "policy_", None)
        if policy is None:
            raise IGLearnError(f"{type(self).__name__} is not fitted yet; call fit(log) first")
        return policy

    def predict_proba(self, context: np.ndarray) -> np.ndarray:
        """pi(. | x) for each context, shape (n, K)."""
        policy = self._fitted_policy()
        context = np.asarray(context, dtype=np.float32)
        with torch.no_grad():
            parts = [policy.probabilities(as_tensor(context[i:i + _CHUNK])).numpy()
                     for i in range(0, len(context), _CHUNK)]
        return np.concatenate(parts) if parts else np.empty((0, 0), np.float32)

    def predict(self, context: np.ndarray) -> np.ndarray:
        """The greedy (argmax) action for each context."""
        return self.predict_proba(context).argmax(1)

    def accuracy(self, context: np.ndarray, label: np.ndarray) -> float:
        """Fraction of contexts whose greedy action equals the label."""
        return float((self.predict(context) == np.asarray(label)).mean())
