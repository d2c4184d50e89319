"""Online contextual bandits around a reward regressor: epsilon-greedy or inverse-gap-weighting
(IGW, Foster and Rakhlin 2020) exploration, and re-fits of the regressor on every interaction
seen so far as their number grows. IGL-P (:class:`~iglearn.learners.iglp.OnlineIGLP`) fills
in the reward with its decoded three-state reward; :class:`OnlineRegressionCB` reads the true
reward (the contextual bandit baseline of the personalised reproduction).
"""

from __future__ import annotations

import math
import numbers
from abc import abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import numpy as np
import torch

from iglearn.data.logs import row_values
from iglearn.data.scaling import (
    DEFAULT_ORIGINS,
    Mode,
    Origins,
    SameUnit,
    Standardiser,
    check_mode,
    check_same_unit,
)
from iglearn.errors import IGLearnError, check_choice
from iglearn.hints import whole_number
from iglearn.learners import closed_form
from iglearn.learners.objective import at_action
from iglearn.learners.online import OnlineLearner, check_width
from iglearn.learners.settings import REGRESSION_OPTIMISATION as DEFAULT_OPTIMISATION
from iglearn.learners.settings import Optimisation
from iglearn.learners.training import Stage, optimise
from iglearn.learners.trials import Batch, Trials, as_tensor, side_by_side
from iglearn.models import Policy, make_policy
from iglearn.models.custom import ModelSpec
from iglearn.models.kernels import number
from iglearn.models.policies import LinearPolicy
from iglearn.sampling import sample_actions
from iglearn.seeding import SeedLike, torch_generator
from iglearn.threads import torch_threads

EXPLORATION = ("epsilon", "igw")
REFIT = Optimisation(grounding_epochs=0, policy_epochs=0, epochs=1, batch_size=1000, lr=0.05,
                     max_steps=30, patience=0, weight_decay_scale=1.0, small_log=0)
"""A warm-started re-fit in an online loop: one epoch, extended to 30 steps."""
REFIT_GROWTH = 1.1
"""The online regression learners' default ``refit_growth``: a re-fit whenever the interactions
have grown by 10 % (and by at least ``refit_every``). Against 20 %, on coba's neighbours task
(4 seeds of 10,000 interactions) coba's IGL-P learner went from 0.797 to 0.861 of the
true-reward CB's gain over random play with all users normal (0.766 to 0.784 with half of
them swapping words), at about 1.2 times the CPU; the linear task moved by 0.01, the digits by
-0.01 and -0.04 (half swapping: 0.659 to 0.621, mean reward per seed 0.46, 0.63, 0.45, 0.58
to 0.49, 0.60, 0.56, 0.37),
and on VW's simulator IGL-P went from 0.777 to 0.788 at 2,500 rounds (worst trial 0.669 to
0.723) at 1.4 times the CPU (benchmarks/coba_grounded.md, docs/guides/personalised.md)."""

Loss = Callable[[Policy, Batch], torch.Tensor]
"""A loss of a (stacked) model on a mini-batch, one value per trial."""


def uniform_weights(probability: torch.Tensor, n_actions: int) -> torch.Tensor:
    """Importance weights 1 / (K p) that re-weight logged interactions to uniform play."""
    return 1.0 / (n_actions * probability)


def fit_model(model: Policy, data: Trials, loss: Loss, settings: Optimisation,
              generator: torch.Generator, progress: str | None = None,
              closed_form: Loss | None = None) -> None:
    """Minimise ``loss`` over ``model``'s parameters on ``data`` (one trial) with the shared
    optimiser (:func:`~iglearn.learners.training.optimise`, one stage of
    ``settings.epochs``), in place; with ``progress``, a progress bar so described. With
    ``closed_form``, the loss that also sets the (stacked) model's gradients itself
    (:attr:`~iglearn.learners.training.Stage.closed_form`)."""
    with side_by_side([model]) as stacked:
        form = None if closed_form is None else partial(closed_form, stacked)
        optimise([Stage(settings.epochs, list(stacked.parameters()),
                        lambda batch: loss(stacked, batch), closed_form=form)], data,
                 settings, [generator], progress)


def fit_reward_model(model: Policy, context: np.ndarray, action: np.ndarray,
                     reward: np.ndarray, settings: Optimisation,
                     generator: torch.Generator, progress: str | None = None) -> None:
    """The regression oracle of inverse gap weighting (Foster and Rakhlin, 2020, SquareCB):
    f(x, a) (``model``'s scores) by squared error to the reward of the logged action (in
    place). E[r | x, a] does not depend on how the action was chosen, so the loss is not
    importance-weighted: weights 1 / (K p) would give the action an exploring policy plays most
    the least weight, the one whose value it most needs (measured in
    docs/guides/personalised.md: no method lost reward without them, several gained). With
    ``progress``, a progress bar so described."""
    def loss(net: Policy, batch: Batch) -> torch.Tensor:
        error = at_action(net.scores(batch.context), batch.action) - batch.signal
        return (error ** 2).mean(-1)
    # the loss reads no logging probability: the batch's is a placeholder
    data = Trials.one(Batch(as_tensor(context), torch.as_tensor(action),
                            torch.ones(len(action)), as_tensor(reward)))
    fit_model(model, data, loss, settings, generator, progress,
              squared_error_step if type(model) is LinearPolicy else None)


@torch.no_grad()
def squared_error_step(net: Policy, batch: Batch) -> torch.Tensor:
    """:func:`fit_reward_model`'s loss, mean[(f(x, a) - r)^2] per trial, with a stacked linear
    model's gradients in closed form: 2 (f(x, a) - r) / n in the logged action's score, zero
    in the others (:func:`~iglearn.learners.closed_form.set_logged_scores`)."""
    scores = net.scores(batch.context)
    error = at_action(scores, batch.action) - batch.signal
    closed_form.set_logged_scores(net.net, batch, scores,
                                  error * number(2.0 / error.shape[-1], error))
    return (error ** 2).mean(-1)


def zhang_gamma(rounds: np.ndarray, n_actions: int, gamma0: float) -> np.ndarray:
    """IGW's gamma at each round t (counted from 0) in the on-policy algorithm of Zhang, Zhang,
    Luo and Mineiro (NeurIPS 2024), as published: sqrt(K) gamma_t with gamma_t = sqrt(1 + t) /
    gamma0, so that :func:`exploration_distribution` gives each action a other than the greedy
    one 1 / (K + sqrt(K) gamma_t (f(x, a*) - f(x, a)))."""
    return np.sqrt(n_actions) * np.sqrt(1.0 + np.asarray(rounds, np.float64)) / gamma0


def exploration_distribution(values: np.ndarray, exploration: str, epsilon: float,
                             gamma: float | np.ndarray) -> np.ndarray:
    """The distribution (n, K) to act with given predicted rewards ``values`` (n, K):
    epsilon-greedy puts 1 - epsilon + epsilon / K on the greedy action and epsilon / K on each
    other; IGW (Foster and Rakhlin 2020) gives each other action 1 / (K + gamma (f(a*) - f(a)))
    and the rest to a*, with one gamma or one per row (:func:`zhang_gamma`)."""
    n, k = values.shape
    best = values.argmax(1)
    if exploration == "epsilon":
        probs = np.full((n, k), epsilon / k)
        probs[np.arange(n), best] += 1 - epsilon
        return probs
    gap = values[np.arange(n), best][:, None] - values
    probs = 1.0 / (k + np.reshape(gamma, (-1, 1)) * gap)
    probs[np.arange(n), best] = 0
    probs[np.arange(n), best] = 1 - probs.sum(1)
    return probs


def check_refits(refit_every: object, refit_growth: object) -> tuple[int, float]:
    """An online regression learner's ``refit_every`` (a whole number >= 1) and
    ``refit_growth`` (a finite number >= 1), or an error naming the one that is not: a float
    ``refit_every`` made blocks of fractional size, and a NaN or infinite growth failed at the
    first fit with the models already re-fitted."""
    every = whole_number(refit_every)
    if every is None or every < 1:
        raise IGLearnError(f"refit_every must be a whole number >= 1 (the first fit's size), "
                           f"got {refit_every!r}")
    if (isinstance(refit_growth, bool) or not isinstance(refit_growth, numbers.Real)
            or not math.isfinite(refit_growth) or refit_growth < 1):
        raise IGLearnError(f"refit_growth must be a finite number >= 1 (the growth of the "
                           f"interactions between re-fits), got {refit_growth!r}")
    return every, float(refit_growth)


def check_exploration(exploration: str, epsilon: float, gamma: float,
                      gamma0: float | None = None) -> None:
    """Refuse an exploration the online regression learners cannot play, naming the setting:
    ``exploration`` one of :data:`EXPLORATION`, ``epsilon`` in [0, 1], ``gamma`` (and
    ``gamma0``, if given) positive. Also called where such a learner is configured before it
    is made (coba's learners), so that a bad setting is told at once."""
    check_choice("exploration", exploration, EXPLORATION)
    if not 0 <= epsilon <= 1:
        raise IGLearnError(f"epsilon must be in [0, 1], got {epsilon!r}")
    if not gamma > 0:
        raise IGLearnError(f"gamma must be positive, got {gamma!r}")
    if gamma0 is not None and not (np.isfinite(gamma0) and gamma0 > 0):
        raise IGLearnError(f"gamma0 must be a positive number (or None), got {gamma0!r}")


class OnlineRegression(OnlineLearner):
    """Acts by ``exploration`` around predicted rewards f(x, a) (uniformly before the first
    fit); stores every interaction (with its definitely-bad flag when given) and re-fits
    (subclasses say how) once their number reaches ``refit_every`` and then whenever it has
    grown by the factor ``refit_growth`` and by at least ``refit_every``.

    Args:
        n_actions: K.
        context_dim: dimension of the contexts.
        feedback_dim: dimension of what ``learn`` receives per interaction (0: a scalar).
        exploration: 'epsilon' (epsilon-greedy) or 'igw' (inverse gap weighting).
        epsilon: exploration probability of epsilon-greedy.
        gamma: IGW's fixed parameter (when ``gamma0`` is None).
        refit_every: the first fit's size and the fewest new interactions between re-fits.
        refit_growth: growth factor of the interactions between re-fits
            (:data:`REFIT_GROWTH`).
        seed: seed or numpy Generator.
        standardise: standardise contexts (and feedback vectors) with the statistics of the
            interactions seen when the first fit is due (before it, play is uniform), kept
            from then on (:mod:`iglearn.data.scaling`, method 'warm-up'): "auto" each block
            off the unit scale only, "on" always, "off" never (the models read raw values).
        gamma0: IGW with the growing gamma of Zhang et al. (NeurIPS 2024) in place of
            ``gamma``: round t (from 0) plays 1 / (K + sqrt(K) gamma_t gap) with gamma_t =
            sqrt(1 + t) / gamma0 (:func:`zhang_gamma`; 10 in the authors' code); None: the
            fixed ``gamma``.
        same_unit: the blocks measured in one unit, "context", "feedback" or "both", whose
            columns share one scale when standardised; "none": a scale per column
            (:class:`~iglearn.learners.settings.FitSettings`).
    """

    origins: ClassVar[Origins] = DEFAULT_ORIGINS
    """Where the zero of the standardised contexts and feedback lies
    (:data:`~iglearn.data.scaling.ORIGINS`): that of the batch learner the re-fits run."""
    context_dim: int

    def __init__(self, n_actions: int, context_dim: int, feedback_dim: int,
                 exploration: str = "epsilon", epsilon: float = 0.2, gamma: float = 100.0,
                 refit_every: int = 50, refit_growth: float = REFIT_GROWTH,
                 seed: SeedLike = None, standardise: Mode = "auto", gamma0: float | None = None,
                 same_unit: SameUnit = "none"):
        super().__init__(n_actions, seed)
        self.context_dim = check_width("context_dim", context_dim)
        self.standardise = check_mode(standardise)
        self.feedback_dim = check_width("feedback_dim", feedback_dim, least=0)
        self.same_unit = check_same_unit(same_unit)
        self.standardiser_: Standardiser | None = None
        """The warm-up's statistics, set at the first fit (None before, or when off)."""
        check_exploration(exploration, epsilon, gamma, gamma0)
        refit_every, refit_growth = check_refits(refit_every, refit_growth)
        self.exploration, self.epsilon, self.gamma = exploration, epsilon, gamma
        self.gamma0 = gamma0
        self.refit_every, self.refit_growth = refit_every, refit_growth
        self._parts: list[tuple[np.ndarray, ...]] = []
        self._whole: tuple[np.ndarray, ...] | None = None
        self._seen = 0
        self._next_fit = refit_every
        self.fitted_ = False
        self.fits_ = 0

    def described(self) -> dict[str, object]:
        """:meth:`OnlineLearner.described` with the feedback's width (none for a learner of
        rewards), the exploration and the re-fits."""
        shown = super().described()
        interactions = shown.pop("interactions")
        if self.feedback_dim:
            shown["feedback_dim"] = self.feedback_dim
        shown.update(exploration=self.exploration, interactions=interactions,
                     refits=self.fits_)
        return shown

    @abstractmethod
    def model_values(self, contexts: np.ndarray) -> np.ndarray:
        """f(x, a) for every action, shape (n, K), of contexts as the models read them
        (standardised)."""

    def predict_values(self, contexts: np.ndarray) -> np.ndarray:
        """f(x, a) for every action, shape (n, K), of raw contexts, checked as
        :meth:`predict`'s are (a learner not fitted yet: play more rounds)."""
        self._require_fit()
        return self._values(self.checked_contexts(contexts, "predict_values"))

    def _require_fit(self) -> None:
        if not self.fitted_:
            raise IGLearnError(f"{type(self).__name__} has not fitted yet; play more rounds")

    def _values(self, contexts: np.ndarray) -> np.ndarray:
        """f(x, a) of raw contexts already checked."""
        contexts = np.asarray(contexts, np.float32)
        if self.standardiser_ is not None:
            contexts = self.standardiser_.apply(contexts)
        return self.model_values(contexts)

    @abstractmethod
    def _fit(self) -> None:
        """Re-fit on :meth:`interactions`."""

    def distribution(self, contexts: np.ndarray, consecutive: bool = True) -> np.ndarray:
        """The distribution (n, K) actions are drawn from for each context: the i-th at round
        ``round_`` + i when ``consecutive``, else each at round ``round_`` (IGW's gamma may
        grow with the rounds)."""
        if not self.fitted_:
            return np.full((len(contexts), self.n_actions), 1.0 / self.n_actions)
        gamma: float | np.ndarray = self.gamma
        if self.gamma0 is not None:
            rounds = self.round_ + np.arange(len(contexts)) * int(consecutive)
            gamma = zhang_gamma(rounds, self.n_actions, self.gamma0)
        return exploration_distribution(self._values(contexts), self.exploration,
                                        self.epsilon, gamma)

    def probabilities(self, contexts: np.ndarray) -> np.ndarray:
        """The distribution (n, K) the next ``act`` draws from (:meth:`distribution`), for each
        context as if it were the next one."""
        return self.distribution(self.checked_contexts(contexts, "probabilities"),
                                 consecutive=False)

    def act_batch(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        contexts = self.checked_contexts(contexts)
        probs = self.distribution(contexts)
        actions = sample_actions(probs, self.rng)
        self.interactions_ += len(contexts)
        self.round_ += len(contexts)
        return actions, probs[np.arange(len(contexts)), actions]

    def block_size(self, stop_round: int | None = None) -> int:
        """Contexts until the next re-fit (or ``stop_round``): acting on them at once is
        exactly acting one at a time."""
        size = self._next_fit - self.interactions_
        if stop_round is not None:
            size = min(size, stop_round - self.round_)
        return max(1, size)

    def interactions(self) -> tuple[np.ndarray, ...]:
        """(contexts, actions, probabilities, signals, definitely-bad flags) seen so far, as
        the models read them (contexts and feedback standardised once the statistics are
        taken)."""
        if self._parts:
            parts = ([self._whole] if self._whole is not None else []) + self._parts
            self._whole = tuple(np.concatenate(column) for column in zip(*parts, strict=True))
            self._parts = []
        assert self._whole is not None
        return self._whole

    def learn(self, context: np.ndarray, action: int, probability: float,
              feedback: np.ndarray | float, definitely_bad: bool | None = None) -> None:
        """Learn from one interaction; ``definitely_bad``: whether its feedback was flagged
        definitely bad (IGL-P reads the flags; None: not flagged)."""
        self.learn_batch(*self.one_interaction(context, action, probability, feedback),
                         None if definitely_bad is None else np.array([definitely_bad]))

    def learn_batch(self, contexts: np.ndarray, actions: np.ndarray,
                    probabilities: np.ndarray, feedback: np.ndarray,
                    definitely_bad: np.ndarray | None = None) -> None:
        """Store the interactions; re-fit when due."""
        contexts, actions, probabilities, signal = self.checked_interactions(
            contexts, actions, probabilities, feedback, self.feedback_dim)
        n = len(actions)
        flags = (np.zeros(n, bool) if definitely_bad is None
                 else row_values("definitely_bad", definitely_bad, n, "learn"))
        if self.standardiser_ is not None:
            contexts = self.standardiser_.apply(contexts)
            if self.feedback_dim:
                signal = self.standardiser_.apply_feedback(signal)
        self._parts.append((contexts, actions, probabilities, signal, flags))
        self._seen += n
        if self._seen >= self._next_fit:
            if self.standardise != "off" and self.standardiser_ is None:
                self._take_warmup_statistics()
            with torch_threads(self.threads):
                self._fit()
            self.check_refit()
            self.fitted_ = True
            self.fits_ += 1
            self._next_fit = max(self._seen + self.refit_every,
                                 int(self._seen * self.refit_growth))

    def _take_warmup_statistics(self) -> None:
        """The statistics of the interactions seen so far (feedback weighted by 1/p), kept
        as ``standardiser_``; the stored interactions are standardised."""
        context, action, probability, signal, flags = self.interactions()
        scaler = Standardiser.of_arrays(context, signal if self.feedback_dim else None,
                                        probability, "warm-up", self.standardise,
                                        origins=self.origins, same_unit=self.same_unit)
        if self.feedback_dim:
            signal = scaler.apply_feedback(signal)
        self._whole = (scaler.apply(context), action, probability, signal, flags)
        self.standardiser_ = scaler

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """The greedy action of the current regressor (contexts checked:
        :meth:`~iglearn.learners.online.OnlineLearner.checked_contexts`)."""
        self._require_fit()
        return self._values(self.checked_contexts(contexts, "predict")).argmax(1)


class OnlineRegressionCB(OnlineRegression):
    """The same loop with the true reward: ``learn`` receives r in place of the feedback
    (play with ``learns_from='reward'``), and the regressor is fitted to it by squared error
    (:func:`fit_reward_model`). A regression needs no range: any finite reward is taken (a
    task's rewards slightly above 1, or coba's importance-weighted estimates).

    Args:
        n_actions: K.
        context_dim: dimension of the contexts.
        exploration: 'epsilon' (epsilon-greedy) or 'igw' (inverse gap weighting).
        epsilon: exploration probability of epsilon-greedy.
        gamma: IGW's parameter.
        refit_every: the first fit's size and the fewest new interactions between re-fits.
        refit_growth: growth factor of the interactions between re-fits
            (:data:`REFIT_GROWTH`).
        policy: class of the regressor, 'linear' or 'mlp'.
        first_fit: optimiser settings of the first fit.
        refit: optimiser settings of the warm-started re-fits.
        seed: seed or numpy Generator.
        standardise: standardise contexts with the first fit's statistics (as for
            :class:`OnlineRegression`).
        same_unit: "context" (or "both"): the contexts are measured in one unit (as for
            :class:`OnlineRegression`).
        gamma0: IGW's growing gamma (as for :class:`OnlineRegression`); None: ``gamma``.
    """

    bounded_reward = False

    def __init__(self, n_actions: int, context_dim: int, exploration: str = "epsilon",
                 epsilon: float = 0.2, gamma: float = 100.0, policy: ModelSpec = "linear",
                 refit_every: int = 50, refit_growth: float = REFIT_GROWTH,
                 first_fit: Optimisation | None = None, refit: Optimisation | None = None,
                 seed: SeedLike = None, standardise: Mode = "auto",
                 gamma0: float | None = None, same_unit: SameUnit = "none"):
        super().__init__(n_actions, context_dim, 0, exploration, epsilon, gamma, refit_every,
                         refit_growth, seed, standardise, gamma0, same_unit)
        self.first_fit = first_fit or DEFAULT_OPTIMISATION
        self.refit = refit or REFIT
        self.policy_: Policy = make_policy(policy, context_dim, n_actions,
                                           torch_generator(self.rng))

    def fitted_models(self) -> dict[str, Any]:
        """The reward regressor each re-fit changes."""
        return {"reward model": self.policy_}

    def _fit(self) -> None:
        context, action, _, reward, _ = self.interactions()
        settings = self.refit if self.fitted_ else self.first_fit
        fit_reward_model(self.policy_, context, action, reward, settings,
                         torch_generator(self.rng))

    def model_values(self, contexts: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self.policy_.scores(as_tensor(contexts)
                                    ).double().numpy()
