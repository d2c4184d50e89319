import dataclasses

import numpy as np
import pytest

from iglearn.envs import digits_environment
from iglearn.envs.section6 import family_environments
from iglearn.errors import IGLearnError
from iglearn.learners import Optimisation
from iglearn.learners.unsupervised import ClusterDecoder, UnsupervisedBandit

FAST = Optimisation(max_steps=100)


@pytest.fixture(scope="module")
def base():
    return digits_environment()


def profile(decode, env):
    """Share of each digit's test images decoded as reward."""
    test_x, test_y = env.test_set()
    psi = decode(test_x)
    return np.array([psi[test_y == d].mean() for d in range(10)])


def test_decoder_reads_feedback_alone(base):
    env = family_environments("env12", base)["ENV(1)"]
    log = env.log(2000, 0)
    rng = np.random.default_rng(5)
    scrambled = dataclasses.replace(
        log, context=rng.random(log.context.shape), action=rng.integers(0, 10, len(log)),
        probability=np.full(len(log), 0.5), reward=1 - log.reward, label=None)
    a = UnsupervisedBandit(3, seed=1, optimisation=FAST).fit(log)
    b = ClusterDecoder(3, seed=np.random.default_rng(1)).fit(scrambled.feedback)
    test_x = env.test_set()[0]
    np.testing.assert_array_equal(a.decode(test_x), b.decode(test_x))
    # ... while the bandit did learn from the decoded reward (the policy moved off uniform).
    assert a.predict_proba(test_x).max(1).mean() > 0.2
    assert set(np.unique(a.decode(log.feedback))) <= {0.0, 1.0}


def test_same_decoded_reward_across_a_family(base):
    # ENV(1) and ENV(2) have one feedback distribution: the decoders fitted on samples of
    # each (same seed, different environments) decode every digit alike.
    envs = family_environments("env12", base)
    profiles = [profile(ClusterDecoder(2, seed=2).fit(env.log(5000, 4).feedback).decode, env)
                for env in envs.values()]
    np.testing.assert_allclose(profiles[0], profiles[1], atol=0.05)
    assert profiles[0].max() - profiles[0].min() > 0.5  # and the decoding is not constant


def test_theorem3_some_environment_defeats_the_decoder(base):
    # Theorem 3's proof: with r_d the decoded reward of digit d, environment i has
    # E[psi | r=1] - E[psi | r=0] = r_i - mean_{j != i} r_j, which averages to zero over i,
    # so some environment has a decoded gap <= 0 and the bandit cannot learn from it.
    envs = family_environments("theorem3", base)
    log = envs["env 0"].log(3000, 0)
    r = profile(ClusterDecoder(10, seed=0).fit(log.feedback).decode, envs["env 0"])
    gaps = np.array([r[i] - np.delete(r, i).mean() for i in range(10)])
    assert gaps.mean() == pytest.approx(0.0, abs=1e-6)
    worst = int(gaps.argmin())
    assert gaps[worst] <= 0
    bad = envs[f"env {worst}"].log(3000, 0)
    psi = ClusterDecoder(10, seed=0).fit(bad.feedback).decode(bad.feedback)
    assert psi[bad.reward > 0].mean() - psi[bad.reward == 0].mean() < 0.05


def test_rejects_bad_settings(base):
    with pytest.raises(IGLearnError, match="at least two clusters"):
        ClusterDecoder(1)
    with pytest.raises(IGLearnError, match="unknown clustering method"):
        ClusterDecoder(2, method="dbscan")
    with pytest.raises(IGLearnError, match="unknown reward rule"):
        ClusterDecoder(2, rule="largest")
    with pytest.raises(IGLearnError, match="not fitted"):
        ClusterDecoder(2).decode(np.zeros((1, 64)))
    with pytest.raises(IGLearnError, match="cannot form"):
        ClusterDecoder(3).fit(np.zeros((2, 64)))


def test_baseline_learns_where_its_decoding_is_right(base):
    # Paper feedback (Section 5): "1" if r = 1, "0" otherwise; clustering separates them.
    log = base.log(3000, 0)
    for method, rule in [("kmeans", "farthest"), ("gmm", "smallest")]:
        psi = ClusterDecoder(2, method, rule, seed=0).fit(log.feedback).decode(log.feedback)
        assert psi[log.reward > 0].mean() - psi[log.reward == 0].mean() > 0.9
    learner = UnsupervisedBandit(2, seed=0, optimisation=FAST).fit(log)
    assert learner.accuracy(*base.test_set()) > 0.6


@pytest.mark.parametrize("method", ["gmm", "kmeans"])
def test_the_clustering_runs_on_the_learners_threads(base, method, monkeypatch):
    """scikit-learn's BLAS and OpenMP pools (loaded by the fit itself) run on ``threads``."""
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_info

    cls = GaussianMixture if method == "gmm" else KMeans
    seen: list[tuple[str, set[int]]] = []

    def recording(name):
        original = getattr(cls, name)

        def call(self, *args, **kwargs):
            seen.append((name, {pool["num_threads"] for pool in threadpool_info()}))
            return original(self, *args, **kwargs)
        return call
    for name in ("fit", "predict"):
        monkeypatch.setattr(cls, name, recording(name))
    log = base.log(300, 1)
    learner = UnsupervisedBandit(2, method, seed=0, optimisation=FAST).fit(log)
    learner.decode(log.feedback)
    assert {name for name, _ in seen} == {"fit", "predict"}  # the fit, then decoding
    assert all(pools == {1} for _, pools in seen), seen
    with pytest.raises(IGLearnError, match=r"threads must be a whole number"):
        UnsupervisedBandit(threads=0)
