"""Vowpal Wabbit's ``--experimental_igl`` played round by round from Python, as an online
learner :func:`~iglearn.envs.play.play` can drive beside iglearn's own.

``--experimental_igl`` reads DSJSON only. A DSJSON line parses into the shared example and one
example per action (what ``--cb_explore_adf`` needs) only when it carries the ``"a"`` field,
the list of actions; each round therefore:

1. parses a prediction line (``"a"`` and the context ``"c"``: the context features in
   namespace ``User``, one ``Action`` namespace per action) with
   ``Workspace.parse(line, LabelType.CONTEXTUAL_BANDIT)``, calls ``predict`` (the
   probability of each action) and ``finish_example``;
2. draws the action from those probabilities with the learner's own generator;
3. parses a learning line (the same plus the chosen action's label, its probability, the
   probabilities ``"p"`` and the feedback ``"o"``: the feedback features in namespace ``v``
   and ``"_definitely_bad"``), calls ``learn`` and ``finish_example``.

The lines are laid out as VW's own IGL simulator test writes them (``igl_simulator.cc``), and
the workspace takes that test's arguments (:data:`VW_ARGS`): epsilon-greedy exploration,
``--coin``, no constant, 19 hash bits, context × action interactions. Features are named by
their position (``x0``, ``x1``, ... in the context, ``v0``, ... in the feedback), with their
values, so any environment's vectors can be played.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from iglearn.errors import IGLearnError
from iglearn.seeding import SeedLike, as_generator

VW_EXTRA = "vw"
"""The optional dependency group that installs the ``vowpalwabbit`` package."""
VW_INSTALL = f"pip install -e '.[{VW_EXTRA}]'"
"""How to install it (iglearn is installed from its clone)."""
VW_ARGS = ("--cb_explore_adf --epsilon {epsilon} --dsjson --coin --experimental_igl "
           "--noconstant -b 19 -q UA --quiet --random_seed {seed}")
"""The workspace's arguments: those of VW's IGL simulator test (``igl_test.cc``), with the
exploration probability and the seed filled in."""


def _features(values: np.ndarray, prefix: str) -> dict[str, float]:
    """The non-zero entries of ``values`` as DSJSON features named by position."""
    return {f"{prefix}{i}": float(v) for i, v in enumerate(values) if v}


def _actions(n_actions: int) -> list[dict]:
    return [{"Action": {f"action={a}": 1}} for a in range(n_actions)]


def prediction_line(context: np.ndarray, n_actions: int) -> str:
    """The DSJSON line VW predicts from: the actions ``"a"`` and the context ``"c"``."""
    return json.dumps({"a": list(range(n_actions)),
                       "c": {"User": _features(context, "x"), "_multi": _actions(n_actions)}})


def learning_line(context: np.ndarray, action: int, pmf: np.ndarray, feedback: np.ndarray,
                  definitely_bad: bool) -> str:
    """The DSJSON line VW learns from: the chosen ``action`` (0-based) with its probability in
    ``pmf``, the feedback vector and its definitely-bad flag (the reward itself stays
    hidden: ``_label_cost`` is 0, as in VW's simulator)."""
    n_actions = len(pmf)
    return json.dumps({
        "_label_cost": 0, "_label_probability": float(pmf[action]),
        "_label_Action": action + 1, "_labelIndex": action,
        "o": [{"v": _features(feedback, "v"), "_definitely_bad": bool(definitely_bad)}],
        "a": list(range(n_actions)),
        "c": {"User": _features(context, "x"), "_multi": _actions(n_actions)},
        "p": [float(p) for p in pmf]})


def vw_status() -> str | None:
    """None when the installed ``vowpalwabbit`` can play ``--experimental_igl`` round by round
    from Python (a DSJSON line with ``"a"`` parses into the shared example and one per action,
    predicts a probability per action and learns); otherwise why not, in one line with how to
    install it when the package is missing."""
    try:
        import vowpalwabbit
    except ImportError:
        return f"the vowpalwabbit package is not installed; install it with {VW_INSTALL}"
    version = getattr(vowpalwabbit, "__version__", "?")
    context, n_actions = np.array([1.0, 0.0, 1.0]), 3
    try:
        workspace = vowpalwabbit.Workspace(VW_ARGS.format(epsilon=0.2, seed=0))
    except Exception as e:  # noqa: BLE001 (any failure means: unsupported)
        return f"vowpalwabbit {version} has no usable --experimental_igl ({e})"
    try:
        examples = workspace.parse(prediction_line(context, n_actions),
                                   vowpalwabbit.LabelType.CONTEXTUAL_BANDIT)
        parsed = len(examples) if isinstance(examples, list) else 1
        pmf = np.asarray(workspace.predict(examples), dtype=np.float64).ravel()
        workspace.finish_example(examples)
        if parsed == n_actions + 1 and len(pmf) == n_actions:
            examples = workspace.parse(
                learning_line(context, 0, pmf, np.array([1.0, 0.0]), False),
                vowpalwabbit.LabelType.CONTEXTUAL_BANDIT)
            workspace.learn(examples)
            workspace.finish_example(examples)
    except Exception as e:  # noqa: BLE001
        return f"vowpalwabbit {version} cannot play a DSJSON line from Python ({e})"
    finally:
        workspace.finish()
    if parsed != n_actions + 1 or len(pmf) != n_actions:
        return (f"vowpalwabbit {version} reads a DSJSON line with \"a\" as {parsed} "
                f"example(s) predicting {len(pmf)} value(s), not as the shared example and one "
                f"per action; install vowpalwabbit 9.11 or later with {VW_INSTALL}")
    return None


class VowpalIGL:
    """Vowpal Wabbit's ``--experimental_igl`` as an online learner for
    :func:`~iglearn.envs.play.play`: one round per block, reading the feedback and its
    definitely-bad flag (module docstring: how each round is played).

    Args:
        n_actions: K.
        epsilon: exploration probability (VW's epsilon-greedy).
        seed: draws the actions from VW's probabilities, and seeds VW.
    """

    reads_definitely_bad = True

    def __init__(self, n_actions: int, epsilon: float = 0.2, seed: SeedLike = None):
        try:
            import vowpalwabbit
        except ImportError as e:
            raise IGLearnError(f"VW needs the vowpalwabbit package; install it with "
                               f"{VW_INSTALL}") from e
        self._vw: Any = vowpalwabbit
        self.n_actions, self.epsilon = n_actions, epsilon
        self.rng = as_generator(seed)
        vw_seed = int(self.rng.integers(0, 2**31 - 1))
        self.workspace = vowpalwabbit.Workspace(VW_ARGS.format(epsilon=epsilon, seed=vw_seed))
        self.round_ = 0
        self.interactions_ = 0
        self._pmf = np.full(n_actions, 1.0 / n_actions)

    @property
    def fitted_(self) -> bool:
        """Whether it has learned from at least one interaction."""
        return self.interactions_ > 0

    def block_size(self, stop_round: int | None = None) -> int:
        """One: VW learns after every round."""
        return 1

    def probabilities(self, context: np.ndarray) -> np.ndarray:
        """VW's probability of each action in ``context`` (nothing is learned)."""
        examples = self.workspace.parse(prediction_line(context, self.n_actions),
                                        self._vw.LabelType.CONTEXTUAL_BANDIT)
        pmf = np.asarray(self.workspace.predict(examples), dtype=np.float64).ravel()
        self.workspace.finish_example(examples)
        return pmf

    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The action drawn from VW's probabilities for each context (a block is one), and its
        probability."""
        actions = np.empty(len(contexts), dtype=np.int64)
        chosen = np.empty(len(contexts))
        for i, context in enumerate(contexts):
            pmf = self.probabilities(context)
            self._pmf = pmf
            actions[i] = self.rng.choice(self.n_actions, p=pmf / pmf.sum())
            chosen[i] = pmf[actions[i]]
            self.round_ += 1
        return actions, chosen

    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray, probabilities: np.ndarray,
                    feedback: np.ndarray, definitely_bad: np.ndarray | None = None) -> None:
        """Learn from the round just played: its feedback vector and definitely-bad flag."""
        flags = np.zeros(len(contexts), dtype=bool) if definitely_bad is None else definitely_bad
        for context, action, signal, flag in zip(contexts, actions, feedback, flags,
                                                 strict=True):
            examples = self.workspace.parse(
                learning_line(context, int(action), self._pmf, np.atleast_1d(signal),
                              bool(flag)),
                self._vw.LabelType.CONTEXTUAL_BANDIT)
            self.workspace.learn(examples)
            self.workspace.finish_example(examples)
            self.interactions_ += 1

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """VW's greedy action (the most probable) for each context."""
        return np.array([int(np.argmax(self.probabilities(c))) for c in contexts],
                        dtype=np.int64)

    def accuracy(self, contexts: np.ndarray, labels: np.ndarray) -> float:
        """Share of ``contexts`` on which the greedy action is the label."""
        return float((self.predict(contexts) == np.asarray(labels)).mean())

    def close(self) -> None:
        """Release VW's workspace."""
        self.workspace.finish()
