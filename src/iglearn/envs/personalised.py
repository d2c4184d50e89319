"""Personalised feedback with three latent states (Maghakian et al., "Personalized Reward
Learning with Interaction-Grounded Learning", ICLR 2023): each user signals in their own way,
and a reaction is positive (the user liked the item), neutral (ignored it) or negative
(disliked it), the latent reward +1, 0 or -1. A rare part of the negative feedback is flagged
"definitely bad" (an explicit dislike).

:class:`PersonalisedSimulator` is Vowpal Wabbit's IGL simulator (``igl_simulator.cc`` of VW's
tests: users Tom and Anna, a time of day, seven topics; Tom enjoys politics and hates music,
Anna enjoys music and hates sports; an enjoyed topic draws "click" or "like", a hated one
"dislike" (flagged) or "skip", any other "none"), generalised: any number of users, times of
day and topics, a vocabulary per user (:class:`Vocabulary`: which token each latent state
draws, with what probability), and feedback either as one-hot tokens or as continuous vectors,
a fixed random embedding of the token plus Gaussian noise.

:func:`grounded_environment` turns a classification data set into an IGL task in the manner
of coba's ``Environments.grounded``: a user id joins the context, the reward is 1 when the
action is the label, and the feedback is a word: "normal" users say one of the good words when
the action is right and a bad word otherwise; the other users swap good and bad words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iglearn.envs.base import Contexts, Environment, Independence
from iglearn.envs.classification import ClassificationEnvironment
from iglearn.envs.mnist import make_environment
from iglearn.errors import IGLearnError
from iglearn.sampling import sample_actions
from iglearn.seeding import SeedLike, as_generator

STATES = ("enjoy", "hate", "neutral")
"""The latent states, in the order of the rewards +1, -1 and 0."""
VW_TOPICS = ("politics", "sports", "music", "food", "finance", "health", "camping")
VW_TOKENS = ("click", "like", "skip", "dislike", "none")


@dataclass(frozen=True)
class Vocabulary:
    """How one user signals each latent state: token -> probability, per state; the tokens in
    ``flagged`` carry the definitely-bad flag."""

    enjoy: Mapping[str, float]
    hate: Mapping[str, float]
    neutral: Mapping[str, float]
    flagged: frozenset[str] = frozenset()

    def tokens(self) -> list[str]:
        """Every token this user may say."""
        return list(dict.fromkeys([*self.enjoy, *self.hate, *self.neutral]))


VW_VOCABULARY = Vocabulary(enjoy={"click": 0.5, "like": 0.5},
                           hate={"dislike": 0.1, "skip": 0.9}, neutral={"none": 1.0},
                           flagged=frozenset({"dislike"}))
"""The vocabulary both users of VW's simulator share."""


class PersonalisedSimulator(Environment):
    """Users, times of day and topics; the reward is +1 on the user's enjoyed topic, -1 on the
    hated one and 0 elsewhere; the feedback is a token of the user's vocabulary
    (``Independence.PERSONALISED``).

    The context is a one-hot user followed by a one-hot time of day, each drawn uniformly. The
    ``label`` of a context (and the test set's correct action) is the user's enjoyed topic.

    Args:
        enjoy: the enjoyed topic of each user.
        hate: the hated topic of each user.
        vocabularies: each user's vocabulary (one shared by all when a single one is given).
        n_topics: K.
        n_times: times of day (context features that do not change the reward).
        embedding_dim: 0 for one-hot token feedback; else the dimension of continuous
            feedback vectors, a fixed random unit-variance embedding of the token plus noise.
        noise: standard deviation of the Gaussian noise added to continuous feedback.
        seed: draws the embedding.
    """

    independence = Independence.PERSONALISED

    def __init__(self, enjoy: Sequence[int], hate: Sequence[int],
                 vocabularies: Vocabulary | Sequence[Vocabulary], n_topics: int,
                 n_times: int = 2, embedding_dim: int = 0, noise: float = 0.5,
                 seed: SeedLike = 0):
        self.enjoy = np.asarray(enjoy, dtype=np.int64)
        self.hate = np.asarray(hate, dtype=np.int64)
        users = len(self.enjoy)
        if users < 1 or len(self.hate) != users:
            raise IGLearnError("give one enjoyed and one hated topic per user")
        if n_topics < 2 or not ((self.enjoy >= 0) & (self.enjoy < n_topics)
                                & (self.hate >= 0) & (self.hate < n_topics)).all():
            raise IGLearnError(f"topics must lie in [0, {n_topics})")
        if (self.enjoy == self.hate).any():
            raise IGLearnError("a user's enjoyed and hated topics must differ")
        if isinstance(vocabularies, Vocabulary):
            vocabularies = [vocabularies] * users
        if len(vocabularies) != users:
            raise IGLearnError(f"give one vocabulary per user ({users}), or one for all")
        self.vocabularies = list(vocabularies)
        self.tokens = list(dict.fromkeys(t for v in self.vocabularies for t in v.tokens()))
        index = {token: i for i, token in enumerate(self.tokens)}
        # (user, state, token) probabilities, states in the order of STATES
        self._emission = np.zeros((users, len(STATES), len(self.tokens)))
        for u, vocabulary in enumerate(self.vocabularies):
            for s, state in enumerate(STATES):
                table = getattr(vocabulary, state)
                for token, probability in table.items():
                    self._emission[u, s, index[token]] = probability
                if not np.isclose(self._emission[u, s].sum(), 1.0):
                    raise IGLearnError(f"user {u}'s {state} probabilities must sum to one")
        self._flagged = np.array([[t in v.flagged for t in self.tokens]
                                  for v in self.vocabularies])
        self.n_users, self.n_times, self.n_actions = users, n_times, n_topics
        self.context_dim = users + n_times
        self.embedding_dim, self.noise = embedding_dim, noise
        self._embedding = None
        if embedding_dim:
            self._embedding = as_generator(seed).standard_normal(
                (len(self.tokens), embedding_dim)).astype(np.float32)
        self.feedback_dim = embedding_dim or len(self.tokens)

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        """Uniformly drawn users and times of day, one-hot."""
        user = rng.integers(0, self.n_users, n)
        time = rng.integers(0, self.n_times, n)
        features = np.zeros((n, self.context_dim), dtype=np.float32)
        features[np.arange(n), user] = 1
        features[np.arange(n), self.n_users + time] = 1
        return Contexts(features, self.enjoy[user])

    def users(self, contexts: Contexts) -> np.ndarray:
        """The user of each context."""
        return contexts.features[:, :self.n_users].argmax(1)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        """+1 on the user's enjoyed topic, -1 on the hated one, 0 elsewhere."""
        user = self.users(contexts)
        action = np.asarray(action)
        return ((action == self.enjoy[user]).astype(np.float32)
                - (action == self.hate[user]).astype(np.float32))

    def tokens_drawn(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
        """The token index each user says, drawn from the vocabulary of the latent state."""
        state = np.where(np.asarray(reward) > 0, 0, np.where(np.asarray(reward) < 0, 1, 2))
        return sample_actions(self._emission[self.users(contexts), state], rng)

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        return self.observe(contexts, actions, reward, rng)[0]

    def observe(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """Feedback vectors (one-hot tokens, or their embeddings plus noise) and the
        definitely-bad flag of each token."""
        token = self.tokens_drawn(contexts, actions, reward, rng)
        n = len(token)
        if self._embedding is None:
            feedback = np.zeros((n, len(self.tokens)), dtype=np.float32)
            feedback[np.arange(n), token] = 1
        else:
            feedback = self._embedding[token] + self.noise * rng.standard_normal(
                (n, self.embedding_dim)).astype(np.float32)
        return feedback, self._flagged[self.users(contexts), token]

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (user, time of day) once, with the user's enjoyed topic."""
        user = np.repeat(np.arange(self.n_users), self.n_times)
        time = np.tile(np.arange(self.n_times), self.n_users)
        features = np.zeros((len(user), self.context_dim), dtype=np.float32)
        features[np.arange(len(user)), user] = 1
        features[np.arange(len(user)), self.n_users + time] = 1
        return features, self.enjoy[user]


def vw_simulator(embedding_dim: int = 0, noise: float = 0.5,
                 seed: SeedLike = 0) -> PersonalisedSimulator:
    """VW's IGL simulator: Tom (enjoys politics, hates music) and Anna (enjoys music, hates
    sports), two times of day, seven topics, tokens click/like (enjoyed), dislike 0.1 (flagged)
    / skip 0.9 (hated), none (any other topic); with ``embedding_dim``, the continuous-feedback
    variant."""
    topic = {name: i for i, name in enumerate(VW_TOPICS)}
    return PersonalisedSimulator(
        enjoy=[topic["politics"], topic["music"]], hate=[topic["music"], topic["sports"]],
        vocabularies=VW_VOCABULARY, n_topics=len(VW_TOPICS), n_times=2,
        embedding_dim=embedding_dim, noise=noise, seed=seed)


def random_simulator(n_users: int = 8, n_topics: int = 10, n_times: int = 4,
                     embedding_dim: int = 0, noise: float = 0.5,
                     seed: SeedLike = 0) -> PersonalisedSimulator:
    """A generalised simulator: random enjoyed and hated topics, and per-user vocabularies:
    half of the users speak VW's vocabulary; the others say "skip" when they enjoy an item
    (they are done with it) and "click" to look for something else when they hate one, so the
    same token means opposite things for the two groups."""
    rng = as_generator(seed)
    enjoy, hate = [], []
    for _ in range(n_users):
        a, b = rng.choice(n_topics, 2, replace=False)
        enjoy.append(int(a))
        hate.append(int(b))
    other = Vocabulary(enjoy={"skip": 0.6, "like": 0.4}, hate={"click": 0.9, "dislike": 0.1},
                       neutral={"none": 1.0}, flagged=frozenset({"dislike"}))
    vocabularies = [VW_VOCABULARY if u % 2 == 0 else other for u in range(n_users)]
    return PersonalisedSimulator(enjoy, hate, vocabularies, n_topics, n_times, embedding_dim,
                                 noise, rng)


class GroundedEnvironment(Environment):
    """A classification task made personalised in the manner of coba's
    ``Environments.grounded``: the context is the example followed by a one-hot user id, the
    reward is 1 when the action is the label, and the feedback a one-hot word: a normal user
    says a random good word (one of the first ``n_good``) when the action is right and a random
    bad word otherwise; the other users swap good and bad words.

    Args:
        task: the classification environment that supplies examples, labels and test set.
        n_users: users, drawn uniformly for each context.
        n_normal: how many of them are normal (users 0 .. n_normal - 1).
        n_words: the vocabulary size.
        n_good: how many of the words are good.
    """

    independence = Independence.PERSONALISED

    def __init__(self, task: ClassificationEnvironment, n_users: int = 10, n_normal: int = 5,
                 n_words: int = 10, n_good: int = 3):
        if not (0 <= n_normal <= n_users and 0 < n_good < n_words):
            raise IGLearnError("need 0 <= n_normal <= n_users and 0 < n_good < n_words")
        self.task, self.n_users, self.n_normal = task, n_users, n_normal
        self.n_words, self.n_good = n_words, n_good
        self.n_actions = task.n_actions
        self.context_dim = task.context_dim + n_users
        self.feedback_dim = n_words

    def contexts(self, n: int, rng: np.random.Generator) -> Contexts:
        inner = self.task.contexts(n, rng)
        user = rng.integers(0, self.n_users, n)
        ids = np.zeros((n, self.n_users), dtype=np.float32)
        ids[np.arange(n), user] = 1
        return Contexts(np.concatenate([inner.features, ids], axis=1), inner.label)

    def reward(self, contexts: Contexts, action: np.ndarray) -> np.ndarray:
        return (np.asarray(action) == contexts.label).astype(np.float32)

    def feedback(self, contexts: Contexts, actions: np.ndarray, reward: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
        """A good word for a normal user's reward and for another user's miss; a bad word
        otherwise."""
        user = contexts.features[:, self.task.context_dim:].argmax(1)
        good = (np.asarray(reward) > 0) == (user < self.n_normal)
        n = len(user)
        word = np.where(good, rng.integers(0, self.n_good, n),
                        rng.integers(self.n_good, self.n_words, n))
        out = np.zeros((n, self.n_words), dtype=np.float32)
        out[np.arange(n), word] = 1
        return out

    def test_set(self) -> tuple[np.ndarray, np.ndarray]:
        features, labels = self.task.test_set()
        ids = np.zeros((len(features), self.n_users), dtype=np.float32)
        ids[np.arange(len(features)), np.arange(len(features)) % self.n_users] = 1
        return np.concatenate([features, ids], axis=1), labels


def grounded_environment(dataset: str = "digits", data_dir: str | Path | None = None,
                         n_users: int = 10, n_normal: int = 5, n_words: int = 10,
                         n_good: int = 3) -> GroundedEnvironment:
    """The grounded transform of scikit-learn's digits ('digits') or of MNIST ('mnist')."""
    return GroundedEnvironment(make_environment(dataset, data_dir), n_users, n_normal, n_words,
                               n_good)
