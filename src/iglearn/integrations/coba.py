"""iglearn's online learners as coba learners (coba 8.x, ``pip install -e '.[coba]'``).

coba (the contextual-bandit evaluation framework from the Vowpal Wabbit team) turns any bandit
environment into an IGL one with ``Environments.grounded(n_users, n_normal, n_words, n_good)``
and plays learners on it with the ``SequentialIGL`` evaluator, which hands each learner the
feedback (a word id, as a 1-tuple) in ``learn``'s ``reward`` argument and puts a user id first
in every context. :class:`CobaLearner` wraps any
:class:`~iglearn.learners.online.OnlineLearner`:

- ``predict(context, actions)`` acts (``act``) and returns the action and its probability;
- ``learn(context, action, reward, probability)`` passes the feedback on (``learn``);
- ``score(context, actions, action)`` is the probability of ``action`` under the learner's
  current policy (:meth:`~iglearn.learners.online.OnlineLearner.probabilities`), which coba's
  off-policy evaluators read;
- ``params`` names the learner and its settings, for coba's result tables.

The online learner is built on the first ``predict`` (or ``score``), once K and the
dimensions are known, by ``make(n_actions, context_dim, feedback_dim)``, which must pickle
(coba copies learners): a class whose constructor starts with those three, or a
``functools.partial`` of one, e.g. ``CobaLearner(partial(E2G, seed=0))``. :func:`e2g`,
:func:`iglp`, :func:`ai_igl`, :func:`regression_cb` and :func:`uniform` are such makers.

Every reward and feedback, whatever its shape (a number, a 1-element list, tuple or array,
coba's reward objects), goes through one conversion, :func:`feedback_values`. Contexts are
dense feature sequences (or one number). User ids and word ids are read from the contexts
and the feedback ("auto": one-hot in the order they first appear, up to ``slots`` of each),
so nothing about the environment is passed by hand. The entry point ``coba.register`` makes
``iglearn.IGLP``, ``iglearn.E2G``, ``iglearn.AIIGL``, ``iglearn.RegressionCB`` and
``iglearn.Uniform`` known to coba's JSON experiment files.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Literal, cast

import numpy as np
from coba import Learner
from coba.primitives import is_batch

from iglearn.data.logs import model_rows
from iglearn.data.scaling import Mode, SameUnit, check_mode, check_same_unit, check_users_unit
from iglearn.errors import IGLearnError
from iglearn.hints import whole_number
from iglearn.learners.ai_igl import OnlineAIIGL
from iglearn.learners.e2g import E2G, check_update_every
from iglearn.learners.iglp import GAMMA0, OnlineIGLP, check_decode_from, check_estimator
from iglearn.learners.online import OnlineLearner, UniformLearner, check_width
from iglearn.learners.regression import OnlineRegressionCB, check_exploration
from iglearn.learners.schedules import PaperSchedule
from iglearn.seeding import check_seed

Maker = Callable[[int, int, int], OnlineLearner]
"""Builds an online learner from (n_actions, context_dim, feedback_dim)."""


AUTO: Literal["auto"] = "auto"
"""``users`` / ``words``: read the ids from the contexts / feedback, one-hot in the order they
first appear, up to ``slots`` of them."""

Ids = int | Literal["auto"] | None
"""How a learner reads user ids (``users``) or word ids (``words``): see :class:`CobaLearner`."""

SLOTS = 32
"""The most distinct user ids and word ids "auto" encodes, unless a learner says otherwise."""


SPARSE_CONTEXT = ("iglearn's coba learners read dense contexts; this environment has sparse "
                  "(dict) contexts: make them dense first (coba's .dense(n_feats, method))")
"""The refusal of a sparse context, or a sparse part of one."""

NO_CONTEXT = ("this environment's interactions have no context (None); iglearn's coba "
              "learners read a dense context vector: give the environment contexts")
"""The refusal of an environment without contexts (coba's ``from_bandit_synthetic``, or a
synthetic task with ``n_context_features=0``, whose contexts SequentialIGL hands on as
(user id, None))."""


def feedback_values(feedback: Any, action: Any) -> np.ndarray:
    """coba's reward or feedback, of any shape, as one flat vector: a number, a 1-element (or
    longer) list, tuple or array, nested or not, or one of coba's reward / feedback objects
    (a callable of the action, evaluated at ``action``). The one conversion every reward and
    feedback goes through on its way to a learner."""
    if callable(feedback):
        feedback = feedback(action)
    if isinstance(feedback, Mapping | str | bytes):
        raise IGLearnError(f"feedback {feedback!r} is neither a number nor a sequence of "
                           f"numbers; iglearn's coba learners read dense feedback")
    try:
        return np.asarray(feedback, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise IGLearnError(f"feedback {feedback!r} is neither a number nor a sequence of "
                           f"numbers") from None


def check_ids(what: str, value: object) -> None:
    """Refuse a ``users`` or ``words`` setting that is not "auto", None or a whole number (at
    least 0 for users, 1 for words), naming it."""
    least = 0 if what == "users" else 1
    whole = None if isinstance(value, str) else whole_number(value)
    if not (value is None or value == AUTO or (whole is not None and whole >= least)):
        raise IGLearnError(f"{what} must be 'auto', None or a whole number >= {least}, got "
                           f"{value!r}")


class CobaLearner(Learner):
    """An iglearn online learner behind coba's ``Learner`` interface.

    Args:
        make: builds the online learner from (n_actions, context_dim, feedback_dim) on the
            first ``predict`` or ``score``; it must pickle (a class, or a
            ``functools.partial``).
        users: the user id SequentialIGL puts first in each context: "auto" one-hot encodes
            the ids in the order they first appear, into ``slots`` features; n >= 1 one-hot
            encodes ids in [0, n); 0 drops the user id (a first context value that is
            neither a whole number nor a name is refused); None: contexts carry no user id.
        words: the feedback is a word id (coba's grounded environments): "auto" one-hot
            encodes the ids in the order they first appear, into ``slots`` features; n >= 1
            ids in [0, n); None: the feedback is ``feedback_dim`` numbers, used as they are.
        name: the learner's name in coba's results.
        params: further settings to report in coba's results.
        feedback_dim: with ``words`` None, the numbers per feedback; 0: one number, handed
            to the learner as a scalar (a reward, for learners that read the true reward).
        slots: the most distinct user ids and word ids "auto" encodes.
    """

    def __init__(self, make: Maker, users: Ids = 0, words: Ids = AUTO, name: str = "iglearn",
                 params: Mapping[str, Any] | None = None, feedback_dim: int = 1,
                 slots: int = SLOTS):
        if not callable(make):
            raise IGLearnError(f"make must build the online learner from (n_actions, "
                               f"context_dim, feedback_dim), got {make!r}: pass a maker such "
                               f"as iglearn.integrations.coba.iglp()")
        check_ids("users", users)
        check_ids("words", words)
        feedback_dim = check_width("feedback_dim", feedback_dim, least=0)
        slots = check_width("slots", slots)
        check_seed(dict(params or {}).get("seed"))  # each named learner reports its seed
        self._make, self._users, self._words = make, users, words
        self._name, self._params = name, dict(params or {})
        self._feedback_dim, self._slots = feedback_dim, slots
        self.learner: OnlineLearner | None = None
        """The wrapped online learner, once the first ``predict`` has built it."""
        self._actions: list[Any] = []
        self._width = 0  # the context vectors' width the learner was built with
        self.ids: dict[str, dict[Any, int]] = {"users": {}, "words": {}}
        """The user and word ids seen so far and their one-hot slots (with "auto")."""

    @property
    def params(self) -> Mapping[str, Any]:
        """The learner's name and settings, for coba's learner table."""
        numbers = {"feedback_dim": self._feedback_dim} if self._words is None else {}
        return {"family": self._name, "users": self._users, "words": self._words, **numbers,
                **self._params}

    # -- encoding -----------------------------------------------------------------------
    def _id_key(self, what: str, value: Any) -> int | str:
        """A user id (``what`` "users") or word id ("words") as iglearn reads it: a whole
        number, or a name where the setting is "auto" (or 0, which drops the id); any other
        value is refused, since it is not an id (the context or feedback holds none)."""
        setting = self._users if what == "users" else self._words
        number = (float(value) if isinstance(value, int | float | np.number)
                  and not isinstance(value, bool) else None)
        if setting in (AUTO, 0) and isinstance(value, str):  # "Tom", "click": ids by name
            return value
        if number is None or not number.is_integer():
            how = ("whole numbers (0 to N - 1) or names" if setting in (AUTO, 0)
                   else f"whole numbers 0 to {setting} - 1 (or names, with {what}='auto')")
            dropped = (" (users=0 drops the first context value as SequentialIGL's user id)"
                       if setting == 0 else "")
            raise IGLearnError(f"{what[:-1]} id {value!r} is neither; {what[:-1]} ids are "
                               f"{how}{dropped}; set {what} to None when the "
                               f"{'context' if what == 'users' else 'feedback'} holds no "
                               f"{what[:-1]} id")
        return int(number)

    def _onehot(self, what: str, value: Any) -> np.ndarray:
        """The one-hot features of a user id (``what`` "users") or word id ("words")."""
        setting = self._users if what == "users" else self._words
        key = self._id_key(what, value)
        size = self._slots if setting == AUTO else int(setting)  # type: ignore[arg-type]
        if setting == AUTO:
            seen = self.ids[what]
            slot = seen.setdefault(key, len(seen))
            if slot >= size:
                del seen[key]
                raise IGLearnError(f"more than {size} distinct {what[:-1]} ids, the most "
                                   f"{what}=\"auto\" one-hot encodes; give {what}=N, the "
                                   f"number of {what[:-1]} ids (numbered 0 to N - 1)")
        else:
            slot = cast(int, key)
            if not 0 <= slot < size:
                raise IGLearnError(f"{what[:-1]} id {value!r} is outside [0, {size}); set "
                                   f"{what} to the environment's n_{what} (or 'auto')")
        onehot = np.zeros(size, np.float32)
        onehot[slot] = 1.0
        return onehot

    def context_vector(self, context: Any, source: str = "act") -> np.ndarray:
        """A coba context as iglearn's dense float32 context vector. A batch of contexts
        (coba's ``.batch(n)``) is refused before anything is read or built, so that coba plays
        it one interaction at a time. Where a user id's one-hot features go first, the
        environment's features are checked here (for ``source``: "act", "learn" or "score"),
        so that a bad value is named by its column among them."""
        if is_batch(context):
            raise IGLearnError("iglearn's coba learners take one interaction at a time, not a "
                               "batch: coba retries a batched environment row by row "
                               "(SequentialCB does; under SequentialIGL leave out .batch(n))")
        if isinstance(context, Mapping):
            raise IGLearnError(SPARSE_CONTEXT)
        if context is None:
            raise IGLearnError(NO_CONTEXT)
        if self._users is None:
            return context_numbers(context)
        if isinstance(context, np.ndarray):
            context = list(context.ravel())
        parts = list(context) if isinstance(context, Sequence) and not isinstance(
            context, str | bytes) else [context]
        if len(parts) == 2 and parts[1] is None:  # SequentialIGL's (user id, None)
            raise IGLearnError(NO_CONTEXT)
        rest = context_numbers(parts[1:])  # the user id first, any kind
        if self._users == 0:
            self._id_key("users", parts[0])  # dropped, but an id: not a measurement
            return rest
        if len(rest):  # named by their columns among the features, not after the user's
            model_rows("context", rest[None], None, source, single=True)
        return np.concatenate([self._onehot("users", parts[0]), rest])

    def feedback_vector(self, feedback: Any, action: Any = None) -> np.ndarray:
        """coba's feedback (SequentialIGL's ``reward`` argument), of any shape
        (:func:`feedback_values`), as the learner reads it: a one-hot word, a float32 vector
        of ``feedback_dim`` numbers, or a float32 scalar (``feedback_dim`` 0)."""
        if self._words is not None and isinstance(feedback, str):  # a word by name
            return self._onehot("words", feedback)
        values = feedback_values(feedback, action)
        if self._words is not None:
            if len(values) != 1:
                raise IGLearnError(f"feedback {feedback!r} is not one word id; set words to "
                                   f"None for feedback of several numbers")
            return self._onehot("words", values[0].item())
        if len(values) != max(self._feedback_dim, 1):
            raise IGLearnError(f"feedback {feedback!r} has {len(values)} numbers where the "
                               f"learner reads {max(self._feedback_dim, 1)} (feedback_dim)")
        return values.astype(np.float32) if self._feedback_dim else values[0].astype(np.float32)

    def _feedback_width(self) -> int:
        if self._words is None:
            return self._feedback_dim
        return self._slots if self._words == AUTO else int(self._words)

    def _index(self, action: Any) -> int:
        found = next((i for i, offered in enumerate(self._actions)
                      if same_action(offered, action)), None)
        if found is None:
            raise IGLearnError(f"action {action!r} is not one the learner was offered")
        return found

    def _same_width(self, context: np.ndarray) -> np.ndarray:
        """``context``, refused in one line where the learner was built on context vectors of
        another width; counted in the environment's features, without the user id's one-hot
        ones (which ``users`` adds)."""
        if self.learner is not None and len(context) != self._width:
            ids = (self._slots if self._users == AUTO else
                   int(self._users) if self._users else 0)
            raise IGLearnError(f"this context has {len(context) - ids} features where the "
                               f"first had {self._width - ids}; give every interaction the "
                               f"same context features")
        return context

    def _built(self, context: np.ndarray, actions: Sequence[Any]) -> OnlineLearner:
        self._same_width(context)
        if self.learner is None:
            self._actions = list(actions)
            self.learner = self._make(len(self._actions), len(context), self._feedback_width())
            self._width = len(context)
        elif len(actions) != len(self._actions) or not all(
                same_action(a, b) for a, b in zip(actions, self._actions, strict=True)):
            raise IGLearnError("iglearn's online learners need the same actions, in the same "
                               "order, at every interaction, and this environment's change: "
                               "play them on one whose actions are fixed (coba's synthetic "
                               "tasks with n_action_features=0)")
        return self.learner

    # -- coba's Learner interface ---------------------------------------------------------
    def predict(self, context: Any, actions: Sequence[Any]) -> dict[str, tuple[Any, float]]:
        """Act on ``context``: the chosen action and the probability it was drawn with, in
        coba's explicit form ``{"action_prob": (action, probability)}``."""
        x = self.context_vector(context)
        action, probability = self._built(x, actions).act(x)
        return {"action_prob": (actions[action], probability)}

    def learn(self, context: Any, action: Any, reward: Any, probability: float | None,
              **kwargs: Any) -> None:
        """Learn from one interaction; under SequentialIGL ``reward`` is the feedback, under
        SequentialCB the reward (:meth:`feedback_vector` reads either)."""
        if self.learner is None:
            raise IGLearnError("learn was called before predict; coba calls predict first")
        if probability is None:  # a logged environment whose log holds none
            raise IGLearnError("coba handed learn no probability (None) for the action "
                               "played; iglearn's learners weight each interaction by 1/p "
                               "and need it: play an environment whose log holds the "
                               "logging policy's probabilities")
        self.learner.learn(self._same_width(self.context_vector(context, "learn")),
                           self._index(action), probability, self.feedback_vector(reward, action))

    def score(self, context: Any, actions: Sequence[Any], action: Any) -> float:
        """The probability that the learner's current policy plays ``action`` on
        ``context`` (coba's off-policy evaluators call it): the distribution the next
        ``predict`` draws from."""
        x = self.context_vector(context, "score")
        learner = self._built(x, actions)
        contexts = learner.checked_contexts(x[None], "score", single=True)
        return float(learner.probabilities(contexts)[0, self._index(action)])


def _scheduled(learner: Callable[..., OnlineLearner], warmup: int, iota: float,
               update_every: int, seed: int, settings: dict[str, Any]) -> Maker:
    """A maker of the online ``learner`` inside Algorithm 1's loop with the paper's schedule
    of ``warmup`` exploration rounds, then n_i = floor(sqrt(i / (K iota))) exploitation
    steps in round i, re-fitting every ``update_every`` rounds."""
    return partial(learner, schedule=PaperSchedule(iota=iota, warmup_rounds=warmup),
                   update_every=update_every, seed=seed, **settings)


def e2g(warmup: int = 4000, iota: float = 100.0, update_every: int = 100, seed: int = 0,
        **settings: Any) -> Maker:
    """A maker of :class:`~iglearn.learners.e2g.E2G` with the paper's schedule of
    ``warmup`` exploration rounds, then n_i = floor(sqrt(i / (K iota))) exploitation steps in
    round i; ``settings`` go to E2G (policy, decoder, exploit, ...)."""
    return _scheduled(E2G, warmup, iota, update_every, seed, settings)


def _uniform(n_actions: int, context_dim: int, feedback_dim: int,
             seed: int = 0) -> OnlineLearner:
    return UniformLearner(n_actions, seed)


def uniform(seed: int = 0) -> Maker:
    """A maker of :class:`~iglearn.learners.online.UniformLearner` (pi_bad)."""
    return partial(_uniform, seed=seed)


ZHANG_FROM_ACTIONS = 4
"""The fewest actions at which coba's :class:`IGLPLearner` decodes with Zhang et al.'s ramp
by default (``estimator="auto"``): its start beta = 0.3 must exceed 1/K."""


def _online_iglp(n_actions: int, context_dim: int, feedback_dim: int,
                 estimator: str = "lipschitz", **settings: Any) -> OnlineLearner:
    if estimator == "auto":
        estimator = "zhang" if n_actions >= ZHANG_FROM_ACTIONS else "lipschitz"
    elif estimator == "zhang" and n_actions < ZHANG_FROM_ACTIONS:  # told at the first decision
        raise IGLearnError(f"estimator 'zhang' needs at least {ZHANG_FROM_ACTIONS} actions (its "
                           f"ramp starts above 1/K); this environment offers {n_actions}: use "
                           f"estimator='auto' or 'lipschitz'")
    return OnlineIGLP(n_actions, context_dim, feedback_dim, estimator=estimator,  # type: ignore[arg-type]
                      **settings)


FIXED_GAMMA = 100.0
"""OnlineIGLP's fixed IGW gamma where none is given (unused while gamma0 grows it)."""


def same_action(first: Any, second: Any) -> bool:
    """Whether two of coba's actions are the same: equal, or numpy arrays (one-hot actions)
    holding the same values, whose ``==`` is elementwise."""
    if isinstance(first, np.ndarray) or isinstance(second, np.ndarray):
        return bool(np.array_equal(np.asarray(first), np.asarray(second)))
    return bool(first == second)


def flat_values(context: Any) -> list[Any]:
    """A coba context's values in order, nested sequences and numpy arrays flattened (a
    numpy context, or SequentialIGL's (user id, features) with numpy features); text and
    sparse (dict) parts are refused, naming them."""
    if isinstance(context, str | bytes):
        raise IGLearnError(f"this context is text ({context!r}); iglearn's coba learners read "
                           f"numbers")
    if isinstance(context, Mapping):  # a sparse part beside dense ones
        raise IGLearnError(SPARSE_CONTEXT)
    if isinstance(context, np.ndarray):
        return list(context.ravel())
    if not isinstance(context, Sequence):
        return [context]
    return [value for part in context for value in flat_values(part)]


def context_numbers(context: Any) -> np.ndarray:
    """A coba context's values (:func:`flat_values`) as a float32 vector; a value that is no
    number is refused in one line, naming it."""
    values = flat_values(context)
    try:
        return np.asarray(values, np.float32)
    except (TypeError, ValueError):
        wrong = next((v for v in values if not isinstance(v, numbers.Real | type(None))),
                     values)
        raise IGLearnError(f"this context holds {wrong!r}, which is not a number; iglearn's "
                           f"coba learners read numbers") from None


def iglp(exploration: str = "epsilon", seed: int = 0, **settings: Any) -> Maker:
    """A maker of :class:`~iglearn.learners.iglp.OnlineIGLP` with ``exploration`` 'epsilon'
    or 'igw'; ``settings`` go to OnlineIGLP (epsilon, gamma, estimator, ...); ``estimator``
    'auto' is 'zhang' with at least :data:`ZHANG_FROM_ACTIONS` actions, else 'lipschitz'."""
    return partial(_online_iglp, exploration=exploration, seed=seed, **settings)


def ai_igl(warmup: int = 4000, iota: float = 100.0, update_every: int = 100, seed: int = 0,
           **settings: Any) -> Maker:
    """A maker of :class:`~iglearn.learners.ai_igl.OnlineAIIGL` with the paper's schedule (as
    :func:`e2g`); ``settings`` go to OnlineAIIGL."""
    return _scheduled(OnlineAIIGL, warmup, iota, update_every, seed, settings)


def _regression_cb(n_actions: int, context_dim: int, feedback_dim: int,
                   **settings: Any) -> OnlineLearner:
    """OnlineRegressionCB, which learns one reward per interaction: refused (when coba first
    asks it to act) behind an adapter that would hand it feedback vectors (``words`` not None,
    or ``feedback_dim`` not 0), where its first ``learn`` failed on a feedback's shape."""
    if feedback_dim:
        raise IGLearnError(f"regression_cb() learns from one reward per interaction, but this "
                           f"CobaLearner hands its learner feedback of {feedback_dim} values; "
                           f"wrap it as CobaLearner(regression_cb(), users=None, words=None, "
                           f"feedback_dim=0), or use RegressionCBLearner")
    return OnlineRegressionCB(n_actions, context_dim, **settings)


def regression_cb(exploration: str = "epsilon", seed: int = 0, **settings: Any) -> Maker:
    """A maker of :class:`~iglearn.learners.regression.OnlineRegressionCB`, the contextual
    bandit that reads the true reward (a scalar); ``settings`` go to it."""
    return partial(_regression_cb, exploration=exploration, seed=seed, **settings)


def _scaling(standardise: Mode, same_unit: SameUnit, users: Ids) -> dict[str, Any]:
    """The registered learners' ``standardise`` and ``same_unit`` settings, checked when the
    learner is made (not at coba's first interaction), as the online learner takes them: a
    context that begins with a user id's one-hot features (``users`` "auto" or n >= 1) is not
    measured in one unit."""
    check_ids("users", users)  # before a learner reads its width
    unit = check_same_unit(same_unit)
    check_users_unit(unit, users)
    return {"standardise": check_mode(standardise), "same_unit": unit}


class _ScheduledLearner(CobaLearner):
    """A learner inside Algorithm 1's loop with the paper's schedule as a coba learner: the
    subclasses name the maker (:func:`e2g` or :func:`ai_igl`) and the registered name."""

    make_learner: ClassVar[Callable[..., Maker]]
    registered: ClassVar[str]

    def __init__(self, users: Ids = 0, words: Ids = AUTO, warmup: int = 4000,
                 iota: float = 100.0, update_every: int = 100, seed: int = 0,
                 standardise: Mode = "auto", same_unit: SameUnit = "none",
                 feedback_dim: int = 1):
        scaling = _scaling(standardise, same_unit, users)
        check_update_every(update_every)  # refused here, not at coba's first interaction
        super().__init__(type(self).make_learner(warmup, iota, update_every, seed, **scaling),
                         users, words, self.registered,
                         {"warmup": warmup, "iota": iota, "update_every": update_every,
                          "seed": seed, **scaling}, feedback_dim=feedback_dim)
        if words is None:  # the decoders read feedback vectors: one number at least
            check_width("feedback_dim", feedback_dim)


class E2GLearner(_ScheduledLearner):
    """E2G (Algorithm 1) as a coba learner, registered as ``iglearn.E2G``.

    Args:
        users: as for :class:`CobaLearner` (default 0: E2G's feedback must not depend on the
            user).
        words: as for :class:`CobaLearner`.
        warmup: exploration rounds before the first fit (the paper's schedule).
        iota: the schedule's complexity term (round i exploits floor(sqrt(i / (K iota)))
            steps; the paper's 100 explores every other step for the first 400 K rounds).
        update_every: rounds between re-fits.
        seed: the learner's seed.
        standardise: standardise contexts and feedback with the statistics of the
            interactions before the first fit: "auto" (the default: a block off the unit
            scale, such as raw measurements around 35), "on" or "off"
            (:mod:`iglearn.data.scaling`).
        same_unit: the blocks measured in one unit, "none" (the default), "context",
            "feedback" or "both": a standardised block named here shares one scale over its
            columns instead of one per column (:mod:`iglearn.data.scaling`). Where ``users``
            reads a user id, the contexts begin with its one-hot features, which are not in
            the unit of the measurements after them: naming the contexts then is refused
            (``users`` 0 or None drops or has no user id). A word id's one-hot feedback is one
            block of one unit.
        feedback_dim: with ``words`` None (feedback that is already numbers), the numbers
            per feedback, at least 1 (the decoders read feedback vectors), as for
            :class:`CobaLearner`.
    """

    make_learner = staticmethod(e2g)
    registered = "iglearn.E2G"


class IGLPLearner(CobaLearner):
    """IGL-P (:class:`~iglearn.learners.iglp.OnlineIGLP`) as a coba learner, registered as
    ``iglearn.IGLP``; it reads the user id from the context and the word from the feedback
    (both "auto" by default), since each user may signal in their own way.

    Args:
        users: as for :class:`CobaLearner`.
        words: as for :class:`CobaLearner`.
        exploration: 'epsilon' (epsilon-greedy) or 'igw' (inverse gap weighting, with
            OnlineIGLP's growing gamma); None: 'igw' with per-user grounding, else
            'epsilon', the better measured of the two for each on coba's grounded tasks
            (``benchmarks/coba_grounded.md``).
        epsilon: epsilon-greedy's exploration probability.
        gamma: IGW's fixed parameter; given, it replaces the growing gamma (``gamma0``).
        gamma0: IGW's growing gamma, sqrt(1 + t) / gamma0 (OnlineIGLP's ``gamma0``,
            :data:`~iglearn.learners.iglp.GAMMA0` by default), used unless ``gamma`` is given.
        seed: the learner's seed.
        personal: ground each word's meaning per user (the default; OnlineIGLP's ``users``
            set to the user id's one-hot width, :class:`~iglearn.models.personal.PersonalIK`),
            so that users who swap good and bad words are understood. With IGW it gained
            more of the true-reward CB's gain than one meaning per word with epsilon-greedy
            in every task and user setting of ``benchmarks/coba_grounded.py`` (4 seeds; one
            meaning per word with IGW did better only on the digits with all users normal),
            at 1.0 to 1.6 CPU-seconds per 1,000 interactions with its two inverse-kinematics
            starts (``benchmarks/coba_grounded.md``).
            False: one meaning per word for all users (the inverse-kinematics model of
            (x, y, x (x) y)). Without a user id (``users`` 0 or None) there is nothing to
            ground per user.
        estimator: the reward estimate from inverse kinematics, OnlineIGLP's ``estimator``:
            'auto' (the default: 'zhang' with at least :data:`ZHANG_FROM_ACTIONS` actions,
            else 'lipschitz'), 'lipschitz' (iglearn's ramp in log L), 'zhang' (Zhang, Zhang,
            Luo & Mineiro's ramp on h, which needs K >= 4 actions) or 'step'.
        decode_from: OnlineIGLP's ``decode_from``: 'feedback' (the default: a positive
            interaction's decoded reward is the mean extremeness of its word from its user,
            :func:`~iglearn.learners.iglp.fit_feedback_posterior`) or 'interaction' (its
            own extremeness, IGL-P as published). With per-user grounding and IGW, Zhang's
            ramp decoded from the feedback gained the most of the true-reward CB's gain on
            coba's neighbours task and the digits with all users normal, and the most in sum
            over the benchmark's six cells; iglearn's ramp decoded from the feedback did
            better on the digits with half the users swapping (0.74 against 0.66)
            (``benchmarks/coba_grounded.md``, "Decoding from the feedback").
        standardise: as for :class:`E2GLearner`.
        same_unit: as for :class:`E2GLearner`.
        feedback_dim: as for :class:`E2GLearner`.
    """

    def __init__(self, users: Ids = AUTO, words: Ids = AUTO, exploration: str | None = None,
                 epsilon: float = 0.2, gamma: float | None = None,
                 gamma0: float | None = GAMMA0, seed: int = 0,
                 personal: bool = True, estimator: str = "auto",
                 decode_from: str = "feedback", standardise: Mode = "auto",
                 same_unit: SameUnit = "none", feedback_dim: int = 1):
        scaling = _scaling(standardise, same_unit, users)
        if not isinstance(personal, bool | np.bool_):  # "false" would be read as True
            raise IGLearnError(f"personal must be True or False, got {personal!r}")
        width = 0 if not personal or not users else SLOTS if users == AUTO else int(users)
        if exploration is None:
            exploration = "igw" if width else "epsilon"
        if gamma is not None:  # a fixed gamma (it was ignored beside the growing one)
            gamma0 = None
        elif gamma0 is None:
            raise IGLearnError("gamma0=None asks for IGW's fixed gamma: give gamma too")
        gamma = FIXED_GAMMA if gamma is None else gamma
        check_exploration(exploration, epsilon, gamma, gamma0)  # here, not at the first
        #                                                        interaction
        if estimator != "auto":
            check_estimator(estimator)  # refused here, not at coba's first interaction
        check_decode_from(decode_from)
        if words is None:  # IGL-P decodes feedback vectors: one number at least
            check_width("feedback_dim", feedback_dim)
        super().__init__(iglp(exploration, seed, epsilon=epsilon, gamma=gamma, gamma0=gamma0,
                              users=width, estimator=estimator, decode_from=decode_from,
                              **scaling),
                         users, words, "iglearn.IGLP",
                         {"exploration": exploration, "epsilon": epsilon,
                          "gamma": "growing" if gamma0 is not None else gamma, "gamma0": gamma0,
                          "seed": seed, "personal": bool(width), "estimator": estimator,
                          "decode_from": decode_from, **scaling}, feedback_dim=feedback_dim)


class AIIGLLearner(_ScheduledLearner):
    """AI-IGL inside Algorithm 1's loop (:class:`~iglearn.learners.ai_igl.OnlineAIIGL`) as a
    coba learner, registered as ``iglearn.AIIGL``.

    Args:
        users: as for :class:`CobaLearner` (default 0: the user id is dropped).
        words: as for :class:`CobaLearner`.
        warmup: exploration rounds before the first fit.
        iota: the schedule's complexity term, as for :class:`E2GLearner`.
        update_every: rounds between re-fits.
        seed: the learner's seed.
        standardise: as for :class:`E2GLearner`.
        same_unit: as for :class:`E2GLearner`.
        feedback_dim: as for :class:`E2GLearner`.
    """

    make_learner = staticmethod(ai_igl)
    registered = "iglearn.AIIGL"


class RegressionCBLearner(CobaLearner):
    """The contextual bandit on the true reward
    (:class:`~iglearn.learners.regression.OnlineRegressionCB`) as a coba learner, registered
    as ``iglearn.RegressionCB``: the reference IGL learners are measured against, played
    with coba's ``SequentialCB`` (whose ``learn`` hands on the reward).

    Args:
        users: as for :class:`CobaLearner` (default None: SequentialCB's contexts carry no
            user id).
        exploration: 'epsilon' or 'igw'.
        epsilon: epsilon-greedy's exploration probability.
        gamma: IGW's parameter.
        seed: the learner's seed.
        standardise: standardise contexts with the statistics of the interactions before
            the first fit: "auto" (the default), "on" or "off" (:mod:`iglearn.data.scaling`).
        same_unit: "context" (or "both"): the contexts are measured in one unit and share one
            scale when standardised (without a user id's one-hot features: ``users`` None or
            0, as for :class:`E2GLearner`); "none" (the default): one scale per column.
    """

    def __init__(self, users: Ids = None, exploration: str = "epsilon", epsilon: float = 0.2,
                 gamma: float = 100.0, seed: int = 0, standardise: Mode = "auto",
                 same_unit: SameUnit = "none"):
        scaling = _scaling(standardise, same_unit, users)
        check_exploration(exploration, epsilon, gamma)  # here, not at the first interaction
        super().__init__(regression_cb(exploration, seed, epsilon=epsilon, gamma=gamma,
                                       **scaling),
                         users, None, "iglearn.RegressionCB",
                         {"exploration": exploration, "epsilon": epsilon, "gamma": gamma,
                          "seed": seed, **scaling}, feedback_dim=0)


class UniformIGLLearner(CobaLearner):
    """Uniform play through the same adapter, registered as ``iglearn.Uniform``."""

    def __init__(self, users: Ids = 0, words: Ids = AUTO, seed: int = 0):
        super().__init__(uniform(seed), users, words, "iglearn.Uniform", {"seed": seed})
