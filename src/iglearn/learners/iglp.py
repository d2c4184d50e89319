"""IGL-P: Interaction-Grounded Learning with personalised feedback and three latent states
(Maghakian, Mineiro, Panaganti, Rucker, Saran, Tan, "Personalized Reward Learning with
Interaction-Grounded Learning", ICLR 2023).

The feedback may depend on the context (each user signals in their own way) and the latent
reward has three states: positive (+1, liked), neutral (0, ignored) and negative (-1,
disliked); a rare part of the negative feedback is flagged ``definitely_bad``. A fit runs
these steps, each a function below:

1. **inverse kinematics** (:func:`fit_inverse_kinematics`): a classifier h(a | x, y) of the
   logged action from the context and the feedback, trained by cross-entropy with importance
   weights 1 / (K p), so that it estimates what uniform play would give,
   h(a | x, y) = P(y | x, a) / sum_b P(y | x, b). Its input is (x, y, x (x) y)
   (:func:`ik_features`): the outer product lets a linear model read "this user said that"
   (a linear model computes its part x^T A_a y from (x, y) without forming the product,
   :func:`outer_linear`, and its gradients in closed form, :func:`ik_step`).
   When the users use the same words differently (some swap good and bad words), a word
   alone tells nothing about the action; with the ``users`` setting the model is
   :class:`~iglearn.models.personal.PersonalIK`, which grounds each word per user, fitted
   from ``ik_starts`` initialisations (:func:`best_inverse_kinematics`);
2. **extreme or neutral** (:func:`likelihood_ratio`): neutral feedback says nothing about the
   action, extreme feedback does. The likelihood ratio of the logged action against the
   others, L = (K - 1) h / (1 - h), is near 1 for neutral feedback and large for extreme
   feedback. Vowpal Wabbit's ``--experimental_igl`` calls an interaction extreme when its
   classifier, trained with weights that set the prior of the chosen action to 1/4, gives the
   chosen action a probability above 1/2: a likelihood ratio above 3 against the policy's
   other actions. The **step** estimate (:func:`step_extremeness`) applies that rule to L,
   the ratio against uniformly chosen other actions. The **lipschitz** estimate
   (:func:`lipschitz_extremeness`) is
   iglearn's conservative version of the Lipschitz estimator of Zhang, Zhang, Luo and Mineiro
   (NeurIPS 2024): a ramp in log L instead of a step, 0 at the threshold and 1 at its square,
   so that it never exceeds the step and changes gently with the estimate h. The **zhang**
   estimate (:func:`zhang_extremeness`) is that estimator as published: a ramp on h itself,
   clip((h - beta) / sigma, 0, 1), beta 0.3 and sigma 0.1 in the authors' code (settings
   ``ramp_start`` and ``ramp_width``); at K = 7 it leaves 0 a little before the step (h >
   1/3) and reaches 1 at h = 0.4 (L = 4). Under every estimate the negative interactions keep
   the step (with 'lipschitz' the decoded reward thus never exceeds the step's). With
   ``decode_from="feedback"`` a positive interaction's extremeness is its feedback's, the
   mean over the log of the extremeness of that feedback from that user
   (:func:`fit_feedback_posterior`, iglearn's addition), rather than its own;
3. **positive or negative** (:func:`negative_actions`): the flag belongs to the feedback, but
   the state belongs to the (context, action): a model g(x, a) of the flagged share of the
   extreme interactions, and an extreme interaction is negative when g of its (x, a) exceeds
   half of the flagged share of all extreme interactions (positive actions draw no flag at
   all). VW instead decodes every unflagged extreme interaction as positive, which makes the
   frequent unflagged reactions to a hated item ("skip") a reward;
4. **policy** (:func:`fit_reward_model`): a reward regressor f(x, a) fitted by squared error
   to the decoded reward r = e (1 - 2 n) in [-1, 1] of the logged action (unweighted, as
   the flag model: both model an outcome given (x, a)); the policy plays argmax_a f(x, a)
   (``predict``).

:class:`OnlineIGLP` acts by inverse gap weighting (by default with the growing gamma of Zhang
et al.'s on-policy algorithm, :func:`~iglearn.learners.regression.zhang_gamma`) or
epsilon-greedy exploration around the regressor and re-fits the three models, warm-started, as
the interactions grow. Zhang et al.'s update of the reward model with r-hat-weighted positive
and (1 - r-hat)-weighted negative labels is, under squared error, the regression to r-hat
itself that step 4 does: r (f - 1)^2 + (1 - r) f^2 = (f - r)^2 + r (1 - r), the same
minimiser and gradient.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self, cast

import numpy as np
import torch

from iglearn.data.contexts import row_groups
from iglearn.data.limits import check_igl_logs
from iglearn.data.logs import InteractionLog, _check_rows, row_values
from iglearn.data.scaling import Mode, Origins, SameUnit, check_users_unit
from iglearn.data.stream import LogStream
from iglearn.errors import IGLearnError, check_choice, warn_caller
from iglearn.learners.base import PolicyLearner, check_finite_fit, log_warnings
from iglearn.learners.batch_igl import IdentifiabilityWarning
from iglearn.learners.monitor import ShortReport
from iglearn.learners.objective import at_action
from iglearn.learners.online import check_width
from iglearn.learners.regression import (
    DEFAULT_OPTIMISATION,
    REFIT,
    REFIT_GROWTH,
    OnlineRegression,
    fit_model,
    fit_reward_model,
    uniform_weights,
)
from iglearn.learners.settings import (
    IGLP_OPTIMISATION,
    IGLP_PERSONAL_OPTIMISATION,
    IGLPSettings,
    Optimisation,
)
from iglearn.learners.trials import Batch, Trials, as_tensor
from iglearn.models import Policy, kernels, make_policy
from iglearn.models.custom import check_specs
from iglearn.models.init import output_layer
from iglearn.models.kernels import number
from iglearn.models.personal import PersonalIK
from iglearn.models.policies import LinearPolicy
from iglearn.models.stacked import StackedLinear
from iglearn.seeding import SeedLike, as_generator, torch_generator
from iglearn.threads import torch_threads

if TYPE_CHECKING:
    import pandas as pd

    from iglearn.data.formats.base import FeatureSchema

ESTIMATORS = ("step", "lipschitz", "zhang")
DECODES = ("interaction", "feedback")


def check_estimator(estimator: str) -> None:
    """Refuse an ``estimator`` setting that is not one of :data:`ESTIMATORS`."""
    check_choice("estimator", estimator, ESTIMATORS)


def check_decode_from(decode_from: str) -> None:
    """Refuse a ``decode_from`` setting that is not one of :data:`DECODES`."""
    check_choice("decode_from", decode_from, DECODES)


ONLINE_FIRST_FIT = replace(DEFAULT_OPTIMISATION, max_steps=60)
"""OnlineIGLP's first fit (on ``refit_every`` interactions): the regression settings, extended
to 60 steps instead of 200."""
ONLINE_REFIT = replace(REFIT, max_steps=20)
"""OnlineIGLP's warm-started re-fits: one epoch, extended to 20 steps instead of 30. With
:data:`ONLINE_FIRST_FIT` they cut the CPU time on VW's simulator by a third at no measured
cost in reward (docs/guides/personalised.md)."""
PERSONAL_FIRST_FIT = replace(ONLINE_FIRST_FIT, max_steps=200)
"""OnlineIGLP's first fit with per-user grounding (``users`` > 0): 200 steps."""
PERSONAL_REFIT = replace(ONLINE_REFIT, max_steps=200)
"""OnlineIGLP's warm-started re-fits with per-user grounding: 200 steps. PersonalIK's product
s(u, y) g(x') starts near its saddle at 0 and leaves it slowly: with :data:`ONLINE_REFIT`'s
20 steps, digits grounded for 10 users (5 swapping good and bad words) stayed near random
play over 10,000 rounds on three of four seeds, with 200 on one (benchmarks/coba_grounded.md)."""
GAMMA0 = 2.0
"""OnlineIGLP's default gamma0 of IGW's growing gamma, sqrt(1 + t) / gamma0: measured best of
1, 2, 3, 4 and 10 (the authors' value) on VW's simulator (docs/guides/personalised.md)."""


EXTREME_WARNING = 0.6
"""The share of extreme interactions (the logged action told from the interaction, L above
the threshold) above which an IGL-P fit warns (:func:`extreme_warning`). On three logs each
of 500 and 2,000 interactions, it was 0.12 to 0.19 on digits and 0.26 to 0.30 on VW's
personalised simulator, where IGL-P learns, and 0.97 to 0.99 on action-inclusive digits,
where the feedback shows the action and IGL-P learns nothing (0.5 % accuracy)."""


def extreme_warning(extreme: float) -> list[str]:
    """The warning of an IGL-P fit that reads nearly every interaction as extreme
    (``extreme`` above :data:`EXTREME_WARNING`): the logged action is told from the feedback
    almost always, so the decoded reward (1 for every extreme interaction not flagged) says
    nothing of which actions were right."""
    if extreme <= EXTREME_WARNING:
        return []
    return [f"IGL-P reads {extreme:.0%} of the interactions as extreme (their logged action "
            f"told from the feedback), so its decoded reward is 1 almost everywhere and says "
            f"nothing of which actions were right: the feedback may show the action taken "
            f"(fit AI-IGL: iglearn.AIIGL, --algorithm ai-igl), or the threshold is too low"]


@dataclass(repr=False)
class IGLPReport(ShortReport):
    """What an IGL-P fit measured about itself (no hidden reward is read)."""

    extreme: float
    """Importance-weighted share of interactions extreme by the step rule (L > threshold)."""
    negative: float
    """Importance-weighted share of the extreme interactions decoded negative."""
    flagged: float
    """Importance-weighted share of the extreme interactions flagged definitely bad."""
    decoded_value: float
    """Importance-weighted mean decoded reward of the greedy policy (IPS)."""
    seconds: float = 0.0
    """Wall time of the fit."""
    ik_losses: list[float] = field(default_factory=list)
    """With several inverse-kinematics starts (``ik_starts``, per-user grounding): the mean
    log-loss (:func:`ik_row_losses`) of each after its fit, the model the fit warm-started from
    first; empty with one start."""
    ik_kept: int = 0
    """Which of the starts of ``ik_losses`` was kept (0: the model the fit started from)."""
    warnings: list[str] = field(default_factory=list)
    """Identifiability warnings raised by the fit."""

    def _items(self) -> list[tuple[str, object]]:
        """The printed fields; those of the inverse-kinematics starts only when there were
        several (one meaning per word fits one)."""
        items = super()._items()
        if self.ik_losses:
            return items
        return [(name, value) for name, value in items if name not in ("ik_losses", "ik_kept")]


def ik_features(context: np.ndarray, feedback: np.ndarray) -> np.ndarray:
    """The inverse-kinematics model's input (x, y, x (x) y): context, feedback and their outer
    product, flattened, shape (n, d_x + d_y + d_x d_y)."""
    context = np.asarray(context, dtype=np.float32)
    feedback = np.asarray(feedback, dtype=np.float32)
    outer = (context[:, :, None] * feedback[:, None, :]).reshape(len(context), -1)
    return np.concatenate([context, feedback, outer], axis=1)


def outer_linear(weight: torch.Tensor, bias: torch.Tensor, rows: torch.Tensor,
                 context_dim: int) -> torch.Tensor:
    """A linear layer on (x, y, x (x) y) (``weight`` (..., out, d_x + d_y + d_x d_y) and
    ``bias`` (..., out), optionally with a leading trial axis) applied to rows (x, y) of shape
    (..., n, d_x + d_y) without forming the outer product: x W_x + y W_y + b plus the
    bilinear part x^T A_k y of each output k, where A = the weight's last d_x d_y columns
    seen as (out, d_x, d_y). The same function (up to float rounding) and gradients as the
    layer on :func:`ik_features` rows."""
    d_y = rows.shape[-1] - context_dim
    out = weight.shape[-2]
    linear = kernels.linear(rows, weight[..., :context_dim + d_y], bias)
    pairs = (weight[..., context_dim + d_y:].unflatten(-1, (context_dim, d_y))
             .transpose(-3, -2).reshape(*weight.shape[:-2], context_dim, out * d_y))
    bilinear = (rows[..., :context_dim] @ pairs).unflatten(-1, (out, d_y))
    return linear + (bilinear * rows[..., None, context_dim:]).sum(-1)


def _outer_layer(net: torch.nn.Module, context_dim: int
                 ) -> torch.nn.Linear | StackedLinear | None:
    """The first layer of a 'linear' or 'mlp' inverse-kinematics network (one model or
    stacked) when :func:`outer_linear` computes it more cheaply than a layer on the explicit
    features: when it has at most d_x outputs (a linear model's K scores), so that its
    bilinear intermediate (n, out d_y) is no wider than the outer product (n, d_x d_y)."""
    first = net[0] if isinstance(net, torch.nn.Sequential) else net
    if not isinstance(first, torch.nn.Linear | StackedLinear):
        return None
    return first if first.weight.shape[-2] <= context_dim else None


def ik_rows(model: Policy, context: np.ndarray, feedback: np.ndarray) -> np.ndarray:
    """What the inverse-kinematics ``model`` reads for each interaction: the rows (x, y), from
    which :func:`ik_scores` computes the outer product's part without forming it, or, for a
    first layer too wide for that to pay (an 'mlp' model), the explicit
    :func:`ik_features`."""
    if isinstance(model.net, PersonalIK) or _outer_layer(model.net, context.shape[1]):
        return np.concatenate([np.asarray(context, dtype=np.float32),
                               np.asarray(feedback, dtype=np.float32)], axis=1)
    return ik_features(context, feedback)


def ik_scores(model: Policy, rows: torch.Tensor, dims: tuple[int, int]) -> torch.Tensor:
    """The inverse-kinematics ``model``'s tempered scores (softmax: h(a | x, y)) of
    :func:`ik_rows` rows (one model, or stacked on a leading trial axis); ``dims`` = (d_x,
    d_y). Equal, up to float rounding, to the model's scores of :func:`ik_features`."""
    net, (d_x, d_y) = model.net, dims
    first = _outer_layer(net, d_x)
    if isinstance(rows, list | tuple):  # a full pass's list of trials' rows
        rows = torch.stack(list(rows))
    if first is None or rows.shape[-1] != d_x + d_y:
        scores = net(rows)
    else:
        scores = outer_linear(first.weight, first.bias, rows, d_x)
        if isinstance(net, torch.nn.Sequential):  # an mlp: the layers after the first
            scores = net[1:](scores)
    return scores if model.temperature == 1.0 else scores / model.temperature


def ik_cross_entropy(model: Policy, rows: torch.Tensor, action: torch.Tensor,
                     probability: torch.Tensor, n_actions: int, dims: tuple[int, int]
                     ) -> torch.Tensor:
    """Step 1's loss per interaction: the importance-weighted (1 / (K p)) -log h(a | x, y)
    of the logged action, on :func:`ik_rows` ``rows`` (one model or stacked trials)."""
    weight = uniform_weights(probability, n_actions)
    log_h = kernels.log_softmax(ik_scores(model, rows, dims))
    return -(weight * at_action(log_h, action))


@torch.no_grad()
def ik_step(model: Policy, batch: Batch, n_actions: int, dims: tuple[int, int]
            ) -> torch.Tensor:
    """:func:`ik_cross_entropy`'s mean (one value per trial) with the gradients its backward
    pass gives, in closed form, for a stacked linear inverse-kinematics model on
    :func:`ik_rows` (x, y) (:func:`supports_ik_step`): with the tempered scores s = f / t and
    w = 1 / (K p), the gradient in f is (w / n) (h(. | x, y) - [. = a]) / t; the layer's
    weights get its product with (x, y) and, for the bilinear part, x^T (g (x) y) laid out as
    the layer's last d_x d_y columns (:func:`outer_linear`), the bias its sum over the rows.
    Autograd's gradients up to float rounding, without its graph: a step on 500 digits
    interactions costs about a fifth less."""
    d_x, d_y = dims
    layer = cast(StackedLinear, model.net)
    rows, action = batch.context, batch.action
    log_h = kernels.log_softmax(ik_scores(model, rows, dims))
    weights = uniform_weights(batch.probability, n_actions)
    loss = -(weights * at_action(log_h, action)).mean(-1)  # as ik_cross_entropy's mean
    share = weights / number(action.shape[-1], weights)
    grad = log_h.exp().mul_(share[..., None]).scatter_add_(-1, action[..., None],
                                                           -share[..., None])
    if model.temperature != 1.0:
        grad = grad / model.temperature
    across = grad.transpose(-1, -2)  # (T, K, n)
    weight = torch.empty_like(layer.weight)
    weight[..., :d_x + d_y] = torch.bmm(across, rows)
    by_feedback = (grad[..., None] * rows[..., None, d_x:]).flatten(-2)  # (T, n, K d_y)
    pairs = torch.bmm(rows[..., :d_x].transpose(-1, -2), by_feedback)  # (T, d_x, K d_y)
    weight[..., d_x + d_y:] = pairs.unflatten(-1, (-1, d_y)).transpose(-3, -2).flatten(-2)
    layer.weight.grad = weight
    layer.bias.grad = across.sum(-1)
    return loss


def supports_ik_step(model: Policy, rows: np.ndarray, dims: tuple[int, int]) -> bool:
    """Whether :func:`ik_step` fits ``model`` on ``rows``: a linear model (one layer, which
    :func:`outer_linear` computes) reading the rows (x, y) of :func:`ik_rows`."""
    return (isinstance(model.net, torch.nn.Linear | StackedLinear)
            and _outer_layer(model.net, dims[0]) is not None
            and rows.shape[-1] == sum(dims))


def fit_inverse_kinematics(model: Policy, rows: np.ndarray, action: np.ndarray,
                           probability: np.ndarray, n_actions: int, settings: Optimisation,
                           generator: torch.Generator, dims: tuple[int, int],
                           progress: str | None = None) -> None:
    """Step 1: h(a | x, y) by importance-weighted (1 / (K p)) cross-entropy of the logged
    action (:func:`ik_cross_entropy`), on ``rows`` = :func:`ik_rows` (or :func:`ik_features`)
    of contexts and feedback of dimensions ``dims`` = (d_x, d_y) (in place; warm-starts from
    its weights); with ``progress``, a progress bar so described."""
    def loss(net: Policy, batch: Batch) -> torch.Tensor:
        return ik_cross_entropy(net, batch.context, batch.action, batch.probability,
                                n_actions, dims).mean(-1)
    def closed_form(net: Policy, batch: Batch) -> torch.Tensor:
        return ik_step(net, batch, n_actions, dims)
    data = Trials.one(Batch(as_tensor(rows), torch.as_tensor(action),
                            torch.as_tensor(probability, dtype=torch.float32),
                            torch.zeros(len(action))))
    fit_model(model, data, loss, settings, generator, progress,
              closed_form if supports_ik_step(model, rows, dims) else None)


SWITCH_CONFIDENCE = 2.0
"""How many standard errors of the paired per-interaction difference a fresh
inverse-kinematics start's log-loss must lie below that of the model a fit starts from to
replace it (:func:`best_inverse_kinematics`)."""


def ik_row_losses(model: Policy, rows: np.ndarray, action: np.ndarray,
                  probability: np.ndarray, n_actions: int, dims: tuple[int, int]
                  ) -> np.ndarray:
    """The loss step 1 minimises (:func:`ik_cross_entropy`), per interaction of the log's
    ``rows``, as float64."""
    with torch.no_grad():
        return ik_cross_entropy(model, as_tensor(rows), torch.as_tensor(action),
                                torch.as_tensor(probability, dtype=torch.float32),
                                n_actions, dims).double().numpy()


def clearly_lower(losses: np.ndarray, than: np.ndarray) -> bool:
    """Whether the per-interaction ``losses`` are lower than ``than`` (of the same
    interactions) by more than :data:`SWITCH_CONFIDENCE` standard errors of their paired
    difference."""
    gain = np.asarray(than, np.float64) - np.asarray(losses, np.float64)
    return bool(gain.mean() > SWITCH_CONFIDENCE * gain.std() / np.sqrt(len(gain)))


def best_inverse_kinematics(models: Sequence[Policy], rows: np.ndarray, action: np.ndarray,
                            probability: np.ndarray, n_actions: int, settings: Optimisation,
                            generator: torch.Generator, dims: tuple[int, int],
                            progress: str | None = None) -> tuple[int, list[float]]:
    """Step 1 from several initialisations (iglearn's addition for per-user grounding,
    setting ``ik_starts``): fit each of ``models`` (:func:`fit_inverse_kinematics`, in place)
    and return which to keep, and every model's mean log-loss on the log
    (:func:`ik_row_losses`). The first model (the one the fit starts from) is kept unless a
    later one's losses are :func:`clearly_lower`; each later model is compared so with the
    one kept so far. A model that reads the users' words explains the logged actions far
    better than one that settled where no word tells anything, which, warm-started, would stay
    there re-fit after re-fit; a fresh start that is only a little better on a few
    interactions (often by memorising them) does not replace a model on its way to
    grounding. With ``progress``, a progress bar so described over each model's fit."""
    losses: list[np.ndarray] = []
    kept = 0
    for i, model in enumerate(models):
        fit_inverse_kinematics(model, rows, action, probability, n_actions, settings,
                               generator, dims, progress)
        losses.append(ik_row_losses(model, rows, action, probability, n_actions, dims))
        if i and clearly_lower(losses[i], than=losses[kept]):
            kept = i
    return kept, [float(loss.mean()) for loss in losses]


def likelihood_ratio(h_logged: np.ndarray, n_actions: int) -> np.ndarray:
    """Step 2: L = (K - 1) h / (1 - h), how much likelier the feedback is after the logged
    action than after another (uniformly chosen) action; 1 for feedback that carries no
    information about the action."""
    h = np.clip(np.asarray(h_logged, dtype=np.float64), 1e-9, 1 - 1e-9)
    return (n_actions - 1) * h / (1 - h)


def step_extremeness(ratio: np.ndarray, threshold: float) -> np.ndarray:
    """Step 2, the step rule on the likelihood ratio: 1 where L > threshold, else 0. With
    threshold 3 it is Vowpal Wabbit's ``--experimental_igl`` rule (its classifier's posterior
    of the chosen action above 1/2 under a prior of 1/4, L > 3, i.e. h > 3 / (K + 2)); the
    step 1[K h > 2] that Zhang et al. (NeurIPS 2024) write for the prior work is h > 2 / K,
    i.e. L > 2 (K - 1) / (K - 2): the same rule only at K = 4 (at VW's simulator's K = 7 it is
    threshold 12 / 5, h > 0.286 against VW's h > 0.333)."""
    return (np.asarray(ratio) > threshold).astype(np.float64)


def lipschitz_extremeness(ratio: np.ndarray, threshold: float) -> np.ndarray:
    """Step 2, the conservative estimate: clip(log(L / threshold) / log(threshold), 0, 1), a
    ramp in log L from 0 at the threshold to 1 at its square; never above the step."""
    log_t = np.log(threshold)
    return np.clip((np.log(ratio) - log_t) / log_t, 0.0, 1.0)


def zhang_extremeness(h_logged: np.ndarray, start: float = 0.3,
                      width: float = 0.1) -> np.ndarray:
    """Step 2, the Lipschitz reward estimate of Zhang, Zhang, Luo and Mineiro ("Provably
    Efficient Interaction-Grounded Learning with Personalized Reward", NeurIPS 2024), as
    published: a ramp on the inverse-kinematics probability h(a | x, y) itself,
    clip((h - start) / width, 0, 1), with start (their beta) 0.3 and width (their sigma) 0.1
    in the authors' code; it never over-estimates the reward."""
    return np.clip((np.asarray(h_logged, dtype=np.float64) - start) / width, 0.0, 1.0)


POSTERIOR_RIDGE = 1.0
"""Ridge penalty of :func:`fit_feedback_posterior`'s regression, in interactions: a feedback
(of a user) seen n times is shrunk towards 0 by roughly 1 / (n + 1) of its own mean
extremeness, so that one seen once or twice is not taken as telling."""
MAX_POSTERIOR_FEATURES = 4096
"""The most features (1, u, y, u (x) y) :func:`fit_feedback_posterior` regresses on that are
not zero everywhere in the log: users times feedback dimensions beyond it would cost too much
per fit."""


def fit_feedback_posterior(user: np.ndarray, feedback: np.ndarray, extremeness: np.ndarray,
                           ridge: float = POSTERIOR_RIDGE) -> tuple[Policy, np.ndarray]:
    """Step 2, decoded from the feedback (iglearn's addition, setting ``decode_from="feedback"``):
    a linear model q(u, y) on (1, u, y, u (x) y) of how extreme the interactions with feedback
    y from user u (``user``: the context's user part, empty without users) are on average,
    scaled so that the typical extreme interaction's feedback has q = 1; the decoded
    extremeness of an interaction is then clip(q(u, y), 0, 1) (:func:`feedback_posterior`).

    Each interaction's own extremeness e (:meth:`IGLP.extremeness`) needs h(. | x, y) to put
    the logged action first: on a task whose best action a linear h cannot tell from the
    context, an interaction rewarded by a telling word is extreme only where h ranks right,
    and the reward model learns the reward only there. Under IGL's assumption that the
    feedback depends on the context and action only through the reward (for each user), the
    chance that a feedback is extreme after reward 1 does not depend on which interaction it
    follows, so the mean e of a feedback is that chance times P(reward 1 | u, y), and the
    reward model's regression of q on (x, a) is, for each user, an increasing affine function
    of P(reward 1 | x, a): the greedy action of the true reward, whatever h misses.

    The regression is a ridge (``ridge``, :data:`POSTERIOR_RIDGE`) on the distinct rows (u,
    y) of the log, weighted by their counts (for one-hot users and words, shrunken means per
    user and word); q is then divided by its median over the extreme interactions, weighted by
    their extremeness. Without an extreme interaction q is 0. Unlike an interaction's own
    estimate, q is not conservative: every interaction of a feedback that step 2 finds extreme
    in some of its interactions decodes that share (scaled), so feedback that is neutral, but
    sometimes found extreme, decodes a small positive reward.

    Returns the model and the decoded extremeness of the given interactions (what
    :func:`feedback_posterior` computes with the model, without its float32 rounding)."""
    user = np.asarray(user, np.float32)
    d_u = user.shape[1]
    rows = np.concatenate([user, np.asarray(feedback, np.float32)], axis=1)
    inverse = row_groups(rows)
    counts = np.bincount(inverse)
    distinct = np.empty((len(counts), rows.shape[1]), np.float32)
    distinct[inverse] = rows  # the rows of a group are equal
    extremeness = np.asarray(extremeness, np.float64)
    sums = np.bincount(inverse, weights=extremeness, minlength=len(counts))
    features = np.concatenate([np.ones((len(distinct), 1), np.float32),
                               ik_features(distinct[:, :d_u], distinct[:, d_u:])], axis=1)
    used = np.flatnonzero(features.any(axis=0))
    if len(used) > MAX_POSTERIOR_FEATURES:
        raise IGLearnError(f"decode_from='feedback' regresses on the users' and feedback's "
                           f"features and their products: this log has {len(used)}, more "
                           f"than {MAX_POSTERIOR_FEATURES}; use decode_from='interaction' or "
                           f"fewer feedback dimensions")
    x = features[:, used].astype(np.float64)
    gram = (x * counts[:, None]).T @ x + ridge * np.eye(len(used))
    coef = np.linalg.solve(gram, x.T @ sums)
    q = (x @ coef)[inverse]
    extreme = extremeness > 0
    scale = weighted_median(q[extreme], extremeness[extreme]) if extreme.any() else 0.0
    weight = np.zeros(features.shape[1])
    if scale > 0:
        weight[used] = coef / scale
    model = LinearPolicy(features.shape[1] - 1, 1)
    model.load_state_dict({"net.weight": torch.as_tensor(weight[None, 1:], dtype=torch.float32),
                           "net.bias": torch.as_tensor(weight[:1], dtype=torch.float32)})
    decoded = np.clip(q / scale, 0.0, 1.0) if scale > 0 else np.zeros(len(q))
    return model, decoded


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The smallest of ``values`` at which their ``weights`` reach half their sum."""
    order = np.argsort(values, kind="stable")
    reached = np.cumsum(np.asarray(weights, np.float64)[order])
    return float(values[order][np.searchsorted(reached, 0.5 * reached[-1])])


def feedback_posterior(model: Policy, user: np.ndarray, feedback: np.ndarray) -> np.ndarray:
    """The decoded extremeness clip(q(u, y), 0, 1) of each interaction from its feedback and
    user part of the context, with q the model :func:`fit_feedback_posterior` fitted."""
    with torch.no_grad():
        q = model.scores(as_tensor(ik_features(user, feedback)))[:, 0].double().numpy()
    return np.clip(q, 0.0, 1.0)


def negative_actions(model: Policy, context: np.ndarray, action: np.ndarray,
                     probability: np.ndarray, flagged: np.ndarray, extreme: np.ndarray,
                     n_actions: int, settings: Optimisation, generator: torch.Generator,
                     progress: str | None = None) -> tuple[np.ndarray, float]:
    """Step 3: fit g(x, a) = P(flagged | x, a, extreme) (sigmoid of ``model``'s scores, in
    place) by logistic loss on the extreme interactions, weighted by how extreme they are;
    return, for every interaction, whether its (x, a) is negative (g above half the flagged
    share of all extreme interactions, importance-weighted to describe uniform play), and that
    share. Without any flagged interaction every extreme interaction is positive.

    g is a model of the flag given (x, a), which does not depend on how the action was chosen,
    so its loss is not importance-weighted: re-weighting to uniform play would give the
    interactions of the action an exploring policy plays most the least weight, and a hated
    topic played greedily kept its too-low g over hundreds of rounds of skips and dislikes,
    the relapses of IGL-P's worst trials on VW's simulator (docs/guides/personalised.md).
    With ``progress``, a progress bar so described."""
    weight = extreme / (n_actions * probability)
    share = float((weight * flagged).sum() / max(weight.sum(), 1e-12))
    if not flagged.any() or share <= 0:
        return np.zeros(len(action), dtype=bool), share
    signal = np.stack([flagged.astype(np.float32), extreme.astype(np.float32)], axis=1)
    if not getattr(model, "grounded_", False):
        # start every (x, a) well below the decision level (a quarter of the share), so that
        # the positive ones, whose targets are all 0, need not travel far
        last = output_layer(model.net)
        with torch.no_grad():
            last.bias.fill_(float(np.log(share / 4 / (1 - share / 4))))
        # a plain flag attribute: nn.Module's __setattr__ is typed for tensors and modules only
        model.grounded_ = True  # type: ignore[assignment]

    def loss(net: Policy, batch: Batch) -> torch.Tensor:
        score = at_action(net.scores(batch.context), batch.action)
        target, how = batch.signal[..., 0], batch.signal[..., 1]
        bce = torch.nn.functional.binary_cross_entropy_with_logits(score, target,
                                                                   reduction="none")
        return (how * bce).mean(-1)
    data = Trials.one(Batch(as_tensor(context), torch.as_tensor(action),
                            torch.as_tensor(probability, dtype=torch.float32),
                            as_tensor(signal)))
    fit_model(model, data, loss, settings, generator, progress)
    with torch.no_grad():
        score = at_action(model.scores(as_tensor(context)), torch.as_tensor(action))
    return torch.sigmoid(score).numpy() > share / 2, share


def decoded_reward(extreme_positive: np.ndarray, extreme_negative: np.ndarray,
                   negative: np.ndarray) -> np.ndarray:
    """The three-state reward: +e on a positive (x, a), -e on a negative one."""
    return np.where(negative, -extreme_negative, extreme_positive)


def check_user_count(users: int, context_dim: int) -> None:
    """Refuse ``users`` user-id features that leave no other context feature."""
    if users >= context_dim:
        raise IGLearnError(f"users is {users} but the contexts have {context_dim} features: "
                           f"the first users features are the user, at least one must be "
                           f"left for the rest")


def check_user_columns(context: np.ndarray, users: int, source: str) -> None:
    """Refuse contexts whose first ``users`` columns are not a one-hot user id (each row a
    single 1, or none for a user not among them, and zeros), naming the first row that is not:
    with ``users`` set, IGL-P grounds each word per user on those columns, and on a
    measurement (a temperature, a count) it would ground nothing and say nothing."""
    if not users or users >= context.shape[1]:
        return  # no user id; too many columns is refused with its own message
    ids = np.asarray(context[:, :users])
    binary = (ids == 0) | (ids == 1)
    bad = np.flatnonzero(~binary.all(1) | (ids.sum(1) > 1))
    if len(bad):
        row = int(bad[0])
        shown_row = ", ".join(f"{v:g}" for v in ids[row, :min(users, 5)]) + (
            ", ..." if users > 5 else "")
        raise IGLearnError(f"{source}: users is {users}, so the first {users} context columns "
                           f"must be a one-hot user id (one 1 per row, zeros elsewhere), but "
                           f"row {row} holds [{shown_row}]; put the user id's one-hot columns "
                           f"first, or set users to 0 (no user id)")


@dataclass(eq=False)
class IGLP(IGLPSettings, PolicyLearner):
    """IGL-P from a log of any logging policy (see the module docstring): ``fit(log)`` reads
    context, action, probability, feedback and, when the log has it, ``definitely_bad``.

    The fitted models are ``ik_`` (h(a | x, y) on :func:`ik_features`), ``flags_`` (g(x, a)),
    ``policy_`` (the reward regressor f(x, a)) and, with ``decode_from="feedback"``,
    ``posterior_`` (q(u, y), :func:`fit_feedback_posterior`). The policy is greedy in f:
    ``predict_proba`` is one-hot on argmax_a f(x, a)."""

    origins: ClassVar[Origins] = ("least", "least")
    """Standardised contexts and feedback start at each column's least value in the log
    (:data:`~iglearn.data.scaling.ORIGINS`), so that an absent word, an unlit pixel or a
    quiet electrode reads 0 as in the tasks' own features: the inverse-kinematics model reads
    the product x (x) y (:func:`ik_features`), a conjunction ("this user said that") only
    where absence is 0. With the other learners' origins (the contexts centred, the
    feedback shifted by its clip limit) raw digits logs of 500 interactions fitted to 40.4 /
    28.8 % (mean / worst of 16 seeds), against 54.3 / 46.0 % from the least values and
    59.0 / 49.9 % on the features as given (docs/results.md, "IGL-P reads raw blocks from
    each column's least value")."""

    MODELS: ClassVar[dict[str, str]] = {"inverse-kinematics model": "ik_",
                                         "flag model": "flags_", "reward model": "policy_"}
    """The models a fit makes, by the name its messages give them: their attributes."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.optimisation is None:
            self.optimisation = IGLP_OPTIMISATION
        check_specs(self)
        check_estimator(self.estimator)
        check_decode_from(self.decode_from)
        self.posterior_: Policy | None = None
        """With ``decode_from="feedback"``, the fitted q(u, y) of :func:`fit_feedback_posterior`."""
        if not (np.isfinite(self.threshold) and self.threshold > 1):
            raise IGLearnError(f"threshold must be a number > 1, got {self.threshold!r}")
        if not 0 < self.ramp_start < 1:
            raise IGLearnError(f"ramp_start must be in (0, 1), got {self.ramp_start!r}")
        if not (np.isfinite(self.ramp_width) and self.ramp_width > 0):
            raise IGLearnError(f"ramp_width must be a positive number, got "
                               f"{self.ramp_width!r}")
        for name, least, meaning in (
                ("users", 0, "the context features that encode the user"),
                ("ik_starts", 1, "the initialisations of the per-user inverse-kinematics "
                                 "model")):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, int) and value >= least):
                raise IGLearnError(f"{name} must be a whole number >= {least} ({meaning}), "
                                   f"got {value!r}")
        check_users_unit(self.same_unit, self.users)

    def fit(self, log: InteractionLog) -> Self:
        """Fit the three models on ``log``, a log in memory (a stream is refused: read the
        file with :func:`~iglearn.data.formats.read_log`), from fresh models every time: a
        fitted learner fitted again ends as a new learner of the same settings would (its
        earlier models and random state are dropped; a log of another K or other widths is
        fitted as any other). Warns (:class:`IdentifiabilityWarning`) the log's own warnings
        (:func:`~iglearn.learners.base.log_warnings`) and extreme fits."""
        if isinstance(log, LogStream):
            raise IGLearnError(f"{log.source}: IGL-P fits a log in memory, not a stream; read "
                               f"the file whole with iglearn.data.formats.read_log(path)")
        check_igl_logs([log])
        check_user_columns(log.context, self.users, log.source)
        start = time.perf_counter()
        flags = (np.zeros(len(log), dtype=bool) if log.definitely_bad is None
                 else log.definitely_bad)
        self.take_statistics(log)
        settings = self.optimisation
        if self.users and settings == IGLP_OPTIMISATION:  # the defaults, per-user grounding
            settings = IGLP_PERSONAL_OPTIMISATION
        with torch_threads(self.threads):
            self.fit_arrays(self.standardised(log.context), log.action, log.probability,
                            self.standardised_feedback(log.feedback), flags, log.n_actions,
                            settings)
        try:
            check_finite_fit(log, self.fitted_models())
        except IGLearnError:  # a diverged fit leaves no model behind
            for attribute in self.MODELS.values():
                vars(self).pop(attribute, None)
            raise
        self.report_.seconds = time.perf_counter() - start
        self.report_.warnings = log_warnings(log) + extreme_warning(
            self.report_.extreme)
        for note in self.report_.warnings:
            warn_caller(note, IdentifiabilityWarning)
        return self

    def fitted_models(self) -> dict[str, Any]:
        """The models of :data:`MODELS` by name, None where not fitted yet."""
        return {name: getattr(self, attribute, None) for name, attribute in self.MODELS.items()}

    def clear_fit(self) -> None:
        """Drop what a fit left behind (the models of :data:`MODELS`, the feedback posterior,
        the report and the random state drawn from ``seed``), so that the next fit starts as
        a new learner's would."""
        for attribute in (*self.MODELS.values(), "report_", "_rng"):
            vars(self).pop(attribute, None)
        self.posterior_ = None

    def fit_arrays(self, context: np.ndarray, action: np.ndarray, probability: np.ndarray,
                   feedback: np.ndarray, flags: np.ndarray, n_actions: int,
                   settings: Optimisation, warm_start: bool = False) -> None:
        """Steps 1-4 on the given interactions (contexts and feedback as the models read
        them: standardised by the caller, see :meth:`fit`): from fresh models and a fresh
        random state drawn from ``seed`` (:meth:`clear_fit`), or, with ``warm_start`` (the
        online learner's re-fits, :class:`OnlineIGLP`), from the models already fitted and
        the random state where the last fit left it (fresh ones the first time)."""
        if not warm_start:
            self.clear_fit()
        rng = getattr(self, "_rng", None) or as_generator(self.seed)
        self._rng = rng
        self.feedback_dim_ = int(np.asarray(feedback).shape[1])
        generator = torch_generator(rng)
        check_user_count(self.users, context.shape[1])
        def personal_ik() -> Policy:
            return Policy(PersonalIK(context.shape[1], self.feedback_dim_, self.users,
                                     n_actions, self.model, generator))
        if getattr(self, "ik_", None) is None:
            self.ik_ = (personal_ik() if self.users else
                        make_policy(self.model, context.shape[1] + self.feedback_dim_ * (
                            1 + context.shape[1]), n_actions, generator))
            self.flags_ = make_policy(self.policy, context.shape[1], n_actions, generator)
            self.policy_ = make_policy(self.policy, context.shape[1], n_actions, generator)
        # weight decay would pull PersonalIK's product s(u, y) g(x') towards its saddle at 0,
        # where no word is telling and neither factor learns
        ik_settings = (replace(settings, weight_decay=0.0, weight_decay_scale=0.0)
                       if self.users else settings)
        rows, dims = ik_rows(self.ik_, context, feedback), (context.shape[1],
                                                            self.feedback_dim_)
        losses: list[float] = []
        kept = 0
        if self.users and self.ik_starts > 1:
            starts = [self.ik_] + [personal_ik() for _ in range(self.ik_starts - 1)]
            kept, losses = best_inverse_kinematics(starts, rows, action, probability,
                                                   n_actions, ik_settings, generator, dims,
                                                   self.progress_label("inverse kinematics"))
            self.ik_ = starts[kept]
        else:
            fit_inverse_kinematics(self.ik_, rows, action, probability, n_actions,
                                   ik_settings, generator, dims,
                                   self.progress_label("inverse kinematics"))
        with torch.no_grad():
            h = at_action(kernels.softmax(ik_scores(self.ik_, as_tensor(rows), dims)),
                          torch.as_tensor(action)).double().numpy()
        step, positive = self.extremeness(h, n_actions)
        self.posterior_ = None
        if self.decode_from == "feedback":
            self.posterior_, positive = fit_feedback_posterior(context[:, :self.users],
                                                               feedback, positive)
        negative, share = negative_actions(self.flags_, context, action, probability,
                                           np.asarray(flags, dtype=bool), step, n_actions,
                                           settings, generator, self.progress_label("flags"))
        reward = decoded_reward(positive, step, negative)
        fit_reward_model(self.policy_, context, action, reward, settings, generator,
                         self.progress_label("policy"))
        weight = 1.0 / (n_actions * np.asarray(probability, dtype=np.float64))
        greedy = self.model_values(context).argmax(1) == action
        extreme_weight = max(float((weight * step).sum()), 1e-12)
        self.report_ = IGLPReport(
            extreme=float((weight * step).sum() / weight.sum()),
            negative=float((weight * step * negative).sum() / extreme_weight),
            flagged=share,
            decoded_value=float((n_actions * weight * greedy * reward).sum() / len(action)),
            ik_losses=losses, ik_kept=kept)

    def decode(self, context: np.ndarray, action: np.ndarray, feedback: np.ndarray,
               definitely_bad: np.ndarray | None = None) -> np.ndarray:
        """The three-state decoded reward of each interaction, in [-1, 1] (contexts and
        feedback as arrays, or DataFrames read by the model's columns: :meth:`contexts_of`,
        :meth:`feedback_of`); the flag model decides which (x, a) are negative, so
        ``definitely_bad`` is not needed (it is accepted, and ignored, for symmetry with the
        logs)."""
        ik = getattr(self, "ik_", None)
        if ik is None:
            raise IGLearnError("IGLP is not fitted yet; call fit(log) first")
        context, feedback = self.standardised(context), self.standardised_feedback(feedback)
        k = self.policy_.scores(as_tensor(context[:1])).shape[-1]
        _check_rows("feedback", feedback, len(context), "decode")
        action = row_values("action", action, len(context), "decode", k)
        with torch.no_grad():
            rows, dims = ik_rows(ik, context, feedback), (context.shape[1], feedback.shape[1])
            h = at_action(kernels.softmax(ik_scores(ik, as_tensor(rows), dims)),
                          torch.as_tensor(action)).double().numpy()
            score = at_action(self.flags_.scores(as_tensor(context)), torch.as_tensor(action))
        negative = torch.sigmoid(score).numpy() > self.report_.flagged / 2 if (
            self.report_.flagged > 0) else np.zeros(len(action), dtype=bool)
        step, positive = self.extremeness(h, k)
        if self.posterior_ is not None:  # decode_from 'feedback': the feedback's extremeness
            positive = feedback_posterior(self.posterior_, context[:, :self.users], feedback)
        return decoded_reward(positive, step, negative)

    def extremeness(self, h_logged: np.ndarray, n_actions: int) -> tuple[np.ndarray,
                                                                          np.ndarray]:
        """Step 2 on the probabilities h(a | x, y) of the logged actions: the step rule (which
        grounds the flags and weighs the negative interactions) and the ``estimator``'s
        extremeness of the positive ones."""
        if self.estimator == "zhang" and self.ramp_start <= 1 / n_actions:
            raise IGLearnError(f"ramp_start {self.ramp_start} is at most 1/K = "
                               f"{1 / n_actions:.3g}: every interaction would count as "
                               f"extreme; set ramp_start above 1/K")
        ratio = likelihood_ratio(h_logged, n_actions)
        step = step_extremeness(ratio, self.threshold)
        if self.estimator == "step":
            return step, step
        if self.estimator == "zhang":
            return step, zhang_extremeness(h_logged, self.ramp_start, self.ramp_width)
        return step, lipschitz_extremeness(ratio, self.threshold)

    def save(self, folder: str | Path, schema: FeatureSchema | None = None) -> Path:
        """Write the fitted models to a model folder
        (:func:`iglearn.learners.registry.save_model`)."""
        from iglearn.learners.registry import save_model
        return save_model(self, folder, schema)

    @classmethod
    def load(cls, folder: str | Path, import_factories: bool = False) -> IGLP:
        """Read a model folder written by :meth:`save` (see
        :func:`iglearn.learners.registry.load_model`); a folder that holds another algorithm's model
        is refused. A custom policy is rebuilt by importing its recorded factory, only with
        ``import_factories``."""
        from iglearn.learners.registry import load_model
        learner = load_model(folder, "igl-p", import_factories=import_factories)
        assert isinstance(learner, IGLP)
        return learner

    def predict_proba(self, context: np.ndarray | pd.DataFrame) -> np.ndarray:
        """The greedy policy in f(x, a): one-hot rows, shape (n, K) (contexts as
        :meth:`~iglearn.learners.base.PolicyLearner.contexts_of` reads them)."""
        values = self.predict_values(context)
        return np.eye(values.shape[1], dtype=np.float32)[values.argmax(1)]

    def predict_values(self, context: np.ndarray | pd.DataFrame) -> np.ndarray:
        """f(x, a) for every action: the predicted decoded reward, shape (n, K), of raw
        contexts (standardised here with the fit's statistics). Refuses an unfitted learner
        before reading the contexts."""
        self._fitted_policy()
        return self.model_values(self.standardised(context))

    def model_values(self, context: np.ndarray) -> np.ndarray:
        """f(x, a) of contexts as the models read them (already standardised)."""
        policy = self._fitted_policy()
        with torch.no_grad():
            return policy.scores(as_tensor(context)).double().numpy()


class OnlineIGLP(OnlineRegression):
    """IGL-P behind the act/learn interface (:class:`OnlineRegression`'s loop): every re-fit
    runs steps 1-4 on all the interactions seen so far, warm-started; ``learn`` also takes
    the definitely-bad flags.

    Args:
        n_actions: K.
        context_dim: dimension of the contexts.
        feedback_dim: dimension of the feedback vectors.
        exploration: 'igw' (inverse gap weighting, the default, with the growing gamma of
            ``gamma0``) or 'epsilon' (epsilon-greedy, VW's protocol).
        epsilon: exploration probability of epsilon-greedy.
        gamma: IGW's fixed parameter, when ``gamma0`` is None.
        refit_every: the first fit's size and the fewest new interactions between re-fits.
        refit_growth: growth factor of the interactions between re-fits
            (:data:`~iglearn.learners.regression.REFIT_GROWTH`).
        estimator: 'lipschitz' (the conservative default), 'step' (VW's rule) or 'zhang'
            (Zhang et al.'s ramp on h), as for :class:`IGLP`.
        threshold: the likelihood-ratio threshold of the extreme test, as for :class:`IGLP`.
        ramp_start: beta of the 'zhang' ramp, as for :class:`IGLP`.
        ramp_width: sigma of the 'zhang' ramp, as for :class:`IGLP`.
        model: class of the inverse-kinematics model, 'linear' or 'mlp'.
        policy: class of the reward regressor, 'linear' or 'mlp'.
        first_fit: optimiser settings of the first fit (None: :data:`ONLINE_FIRST_FIT`, or
            with ``users`` :data:`PERSONAL_FIRST_FIT`).
        refit: optimiser settings of the warm-started re-fits (None: :data:`ONLINE_REFIT`, or
            with ``users`` :data:`PERSONAL_REFIT`).
        seed: seed or numpy Generator.
        standardise: standardise contexts and feedback with the first fit's statistics (as
            for :class:`~iglearn.learners.regression.OnlineRegression`).
        gamma0: IGW's growing gamma of Zhang et al., sqrt(1 + t) / gamma0 (as for
            :class:`~iglearn.learners.regression.OnlineRegression`): :data:`GAMMA0` (2; the
            authors' 10 explores too long on VW's simulator); None: the fixed ``gamma``.
        users: the first ``users`` context features encode the user: per-user grounding
            (:class:`PersonalIK`), as for :class:`IGLP`; 0: none.
        ik_starts: with users, the inverse-kinematics initialisations each fit tries (the
            warm-started model and ``ik_starts`` - 1 fresh ones), as for :class:`IGLP`.
        decode_from: 'interaction' (each interaction's own extremeness) or 'feedback' (its
            feedback's, :func:`fit_feedback_posterior`), as for :class:`IGLP`.
        same_unit: the blocks measured in one unit (as for
            :class:`~iglearn.learners.regression.OnlineRegression`).
    """

    reads_definitely_bad = True
    origins = IGLP.origins

    def __init__(self, n_actions: int, context_dim: int, feedback_dim: int,
                 exploration: str = "igw", epsilon: float = 0.2, gamma: float = 100.0,
                 estimator: Literal["step", "lipschitz", "zhang"] = "lipschitz",
                 threshold: float = 3.0, model: Literal["linear", "mlp"] = "linear",
                 policy: Literal["linear", "mlp"] = "linear", refit_every: int = 50,
                 refit_growth: float = REFIT_GROWTH,
                 first_fit: Optimisation | None = None,
                 refit: Optimisation | None = None, seed: SeedLike = None,
                 standardise: Mode = "auto", ramp_start: float = 0.3, ramp_width: float = 0.1,
                 gamma0: float | None = GAMMA0, users: int = 0, ik_starts: int = 2,
                 decode_from: Literal["interaction", "feedback"] = "interaction",
                 same_unit: SameUnit = "none"):
        check_width("feedback_dim", feedback_dim)  # IGL-P decodes vectors: one number at least
        super().__init__(n_actions, context_dim, feedback_dim, exploration, epsilon, gamma,
                         refit_every, refit_growth, seed, standardise, gamma0, same_unit)
        check_users_unit(self.same_unit, users)
        self.first_fit = first_fit or (PERSONAL_FIRST_FIT if users else ONLINE_FIRST_FIT)
        self.refit = refit or (PERSONAL_REFIT if users else ONLINE_REFIT)
        # the interactions reach the batch learner already standardised
        self.batch = IGLP(model=model, policy=policy, estimator=estimator,
                          threshold=threshold, ramp_start=ramp_start, ramp_width=ramp_width,
                          optimisation=self.first_fit, seed=self.rng, standardise="off",
                          users=users, ik_starts=ik_starts, decode_from=decode_from)
        check_user_count(users, self.context_dim)  # a whole number now (checked by IGLP)

    def fitted_models(self) -> dict[str, Any]:
        """IGL-P's three models, which each re-fit changes."""
        return self.batch.fitted_models()

    def _fit(self) -> None:
        settings = self.refit if self.fitted_ else self.first_fit
        context, action, probability, feedback, flags = self.interactions()
        # each re-fit continues from the last one's models (warm-started)
        self.batch.fit_arrays(context, action, probability, feedback, flags, self.n_actions,
                              settings, warm_start=True)

    def model_values(self, contexts: np.ndarray) -> np.ndarray:
        return self.batch.model_values(contexts)
