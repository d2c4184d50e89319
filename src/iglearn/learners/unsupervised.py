"""The unsupervised-learning approach of Section 6: decode the reward by clustering feedback
vectors without interaction, then learn a policy with a contextual bandit on that reward.

The decoder is a function of the feedback alone (never of contexts, actions or rewards), so by
Theorem 3 it decodes the same reward in every environment whose feedback marginal is the same,
and must fail on some of them.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from iglearn.data.limits import check_fit_size
from iglearn.data.logs import InteractionLog
from iglearn.errors import IGLearnError, check_choice
from iglearn.learners.base import PolicyLearner
from iglearn.learners.baselines import ContextualBandit
from iglearn.learners.settings import METHODS as METHODS
from iglearn.learners.settings import RULES as RULES
from iglearn.learners.settings import Optimisation
from iglearn.seeding import SeedLike, as_generator
from iglearn.threads import check_threads, torch_threads


class ClusterDecoder:
    """psi(y) = 1{y falls in the cluster a fixed rule calls 'reward'}, fitted on feedback only.

    Feedback is projected on its leading principal components, then clustered by a Gaussian
    mixture (diagonal covariances) or k-means. The rule names the reward cluster without any
    reward information: 'smallest' (reward is rare) or 'farthest' (the cluster whose centre is
    farthest from the mean feedback).

    Args:
        n_clusters: number of clusters (>= 2).
        method: 'gmm' or 'kmeans'.
        rule: 'smallest' or 'farthest'.
        components: principal components kept before clustering (capped by the data).
        max_fit_samples: the clustering is fitted on at most this many feedback vectors.
        seed: seed or numpy Generator for the subsample and the clustering.
        threads: threads of the projection and the clustering (scikit-learn's BLAS and
            OpenMP; :func:`~iglearn.threads.torch_threads`).
    """

    def __init__(self, n_clusters: int = 2, method: str = "gmm", rule: str = "smallest",
                 components: int = 30, max_fit_samples: int = 5000, seed: SeedLike = None,
                 threads: int = 1):
        check_threads(threads)
        if n_clusters < 2:
            raise IGLearnError(f"n_clusters={n_clusters}: decoding a reward needs at least "
                               f"two clusters")
        check_choice("clustering method", method, METHODS)
        check_choice("reward rule", rule, RULES)
        self.n_clusters = n_clusters
        self.method = method
        self.rule = rule
        self.components = components
        self.max_fit_samples = max_fit_samples
        self.seed = seed
        self.threads = threads

    def fit(self, feedback: np.ndarray) -> ClusterDecoder:
        """Cluster ``feedback`` (n, d_y) and pick the reward cluster, on ``threads`` threads
        (scikit-learn's libraries are loaded first, so that the block holds them)."""
        from sklearn.cluster import KMeans
        from sklearn.decomposition import PCA
        from sklearn.mixture import GaussianMixture

        with torch_threads(self.threads):  # after the imports: the block holds their pools
            feedback = np.asarray(feedback, dtype=np.float32)
            if len(feedback) < self.n_clusters:
                raise IGLearnError(f"{len(feedback)} feedback vectors cannot form "
                                   f"{self.n_clusters} clusters; log more interactions")
            rng = as_generator(self.seed)
            rows = (rng.choice(len(feedback), self.max_fit_samples, replace=False)
                    if len(feedback) > self.max_fit_samples else np.arange(len(feedback)))
            sample = feedback[rows]
            state = int(rng.integers(0, 2**31 - 1))
            components = min(self.components, sample.shape[1], len(sample) - 1)
            self.projection_ = PCA(components, random_state=state).fit(sample)
            z = self.projection_.transform(sample)
            if self.method == "gmm":
                self.clusterer_ = GaussianMixture(self.n_clusters, covariance_type="diag",
                                                  n_init=2, random_state=state).fit(z)
            else:
                self.clusterer_ = KMeans(self.n_clusters, n_init=3, random_state=state).fit(z)
            assignment = self.clusterer_.predict(z)
            self.cluster_sizes_ = np.bincount(assignment, minlength=self.n_clusters) / len(z)
            if self.rule == "smallest":
                self.reward_cluster_ = int(self.cluster_sizes_.argmin())
            else:
                centres = np.stack([z[assignment == c].mean(0) if (assignment == c).any()
                                    else np.zeros(z.shape[1]) for c in range(self.n_clusters)])
                self.reward_cluster_ = int(np.linalg.norm(centres - z.mean(0), axis=1).argmax())
            return self

    def decode(self, feedback: np.ndarray) -> np.ndarray:
        """The decoded reward (0 or 1, float32) of each feedback vector, on ``threads``
        threads."""
        if not hasattr(self, "clusterer_"):
            raise IGLearnError("ClusterDecoder is not fitted yet; call fit(feedback) first")
        with torch_threads(self.threads):
            z = self.projection_.transform(np.asarray(feedback, dtype=np.float32))
            return (self.clusterer_.predict(z) == self.reward_cluster_).astype(np.float32)


class UnsupervisedBandit(PolicyLearner):
    """Section 6's unsupervised-learning approach: a :class:`ClusterDecoder` fitted on the
    log's feedback decodes the reward, and :class:`ContextualBandit` learns from it.

    Args:
        n_clusters: the decoder's clusters (see :class:`ClusterDecoder`).
        method: the decoder's clustering method (see :class:`ClusterDecoder`).
        rule: the decoder's rule for the reward cluster (see :class:`ClusterDecoder`).
        policy: policy class, 'linear' or 'mlp'.
        optimisation: the contextual bandit's optimiser settings.
        seed: seed or numpy Generator.
        threads: threads of the clustering and of the bandit's fit
            (:func:`~iglearn.threads.torch_threads`; 1: small fits are fastest on one).
    """

    def __init__(self, n_clusters: int = 2, method: str = "gmm", rule: str = "smallest",
                 policy: str = "linear", optimisation: Optimisation | None = None,
                 seed: SeedLike = None, threads: int = 1):
        check_threads(threads)
        self.n_clusters = n_clusters
        self.method = method
        self.rule = rule
        self.policy = policy
        self.optimisation = optimisation
        self.seed = seed
        self.threads = threads

    def fit(self, log: InteractionLog) -> UnsupervisedBandit:
        """Fit the decoder on ``log.feedback`` alone, then the bandit on the decoded reward."""
        check_fit_size([log])
        start = time.perf_counter()
        rng = as_generator(self.seed)
        self.decoder_ = ClusterDecoder(self.n_clusters, self.method, self.rule, seed=rng,
                                       threads=self.threads).fit(log.feedback)
        decoded = dataclasses.replace(log, reward=self.decoder_.decode(log.feedback))
        self.bandit_ = ContextualBandit(self.policy, self.optimisation or Optimisation(),
                                       seed=rng, threads=self.threads).fit(decoded)
        self.policy_ = self.bandit_.policy_
        self.seconds_ = time.perf_counter() - start
        return self

    def decode(self, feedback: np.ndarray) -> np.ndarray:
        """The decoded reward of each feedback vector."""
        self._fitted_policy()
        return self.decoder_.decode(feedback)
