"""The environments of Section 6: families whose feedback looks the same to unsupervised learning.

Every environment keeps the MNIST task's contexts, actions and reward (r = 1 iff the action is
the context's digit) and differs only in the feedback y | r:

- Theorem 3's ten environments: environment i shows an image of "i" when r = 1 and an image
  whose label is uniform over the other nine digits when r = 0;
- ENV(1) and ENV(2) (Appendix B): r = 0 shows "0" or "1" in the ratio 8:1 and r = 1 shows "2";
  ENV(2) exchanges "1" and "2".

Under uniform play (P(r = 1) = 1/K) the marginal distribution of y is identical within each
family, so any decoder fitted on feedback alone decodes the same reward in every member.
"""

from __future__ import annotations

from pathlib import Path

from iglearn.envs.classification import (
    ClassificationEnvironment,
    LabelFeedback,
    normalised,
    uniform_play,
)
from iglearn.envs.mnist import make_environment
from iglearn.errors import check_choice

# A feedback model: (class mixture when r = 1, class mixture when r = 0).
Feedback = tuple[dict[int, float], dict[int, float]]

DIGITS = tuple(range(10))


def theorem3_feedback(i: int) -> Feedback:
    """Environment ``i`` of Theorem 3: "i" if r = 1, uniform over the other digits if r = 0."""
    if i not in DIGITS:
        raise ValueError(f"Theorem 3's environments are numbered 0..9, got {i}")
    return {i: 1.0}, {j: 1.0 / 9 for j in DIGITS if j != i}


def env_feedback(n: int) -> Feedback:
    """ENV(1) (n = 1): "2" if r = 1, "0" or "1" in the ratio 8:1 if r = 0; ENV(2) (n = 2)
    exchanges "1" and "2"."""
    if n not in (1, 2):
        raise ValueError(f"Appendix B defines ENV(1) and ENV(2), got ENV({n})")
    rewarded, distractor = (2, 1) if n == 1 else (1, 2)
    return {rewarded: 1.0}, {0: 8.0, distractor: 1.0}


FAMILIES: dict[str, dict[str, Feedback]] = {
    "theorem3": {f"env {i}": theorem3_feedback(i) for i in DIGITS},
    "env12": {"ENV(1)": env_feedback(1), "ENV(2)": env_feedback(2)},
}
"""family -> environment name -> feedback model."""


def uniform_play_marginal(feedback: Feedback, n_actions: int = 10) -> dict[int, float]:
    """P(feedback class) under uniform play, where P(r = 1) = 1/K exactly (one correct action
    per context): (1/K) * mixture(r = 1) + (1 - 1/K) * mixture(r = 0), over the classes of
    positive mass (see :func:`~iglearn.envs.classification.uniform_play`)."""
    on_reward, on_no_reward = feedback
    labels, marginal, _ = uniform_play({1: normalised(on_reward), 0: normalised(on_no_reward)},
                                       n_actions)
    return dict(zip(labels.tolist(), marginal.tolist(), strict=True))


def with_feedback(env: ClassificationEnvironment, feedback: Feedback,
                  ) -> ClassificationEnvironment:
    """``env`` with the same contexts, reward, feedback images and test set, but feedback
    classes drawn from ``feedback``."""
    source = env.feedback_model.source
    return ClassificationEnvironment(env.context_source, LabelFeedback(source, *feedback),
                                     env.test_set(), env.n_actions)


def family_environments(family: str, base: ClassificationEnvironment,
                        ) -> dict[str, ClassificationEnvironment]:
    """Every environment of ``family`` ('theorem3' or 'env12'), built on ``base``."""
    check_choice("Section 6 family", family, sorted(FAMILIES))
    return {name: with_feedback(base, feedback) for name, feedback in FAMILIES[family].items()}


def section6_environments(dataset: str = "mnist", data_dir: str | Path | None = None,
                          ) -> dict[str, dict[str, ClassificationEnvironment]]:
    """Both families on 'mnist' (infinite MNIST, the paper's) or 'digits' (offline)."""
    base = make_environment(dataset, data_dir)
    return {family: family_environments(family, base) for family in FAMILIES}

