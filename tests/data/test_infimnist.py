import time

import numpy as np

from iglearn.data.infimnist import InfiniteMNIST, hash_uniform


def test_hash_uniform_is_deterministic_and_spread():
    u = hash_uniform(np.arange(10000), 4)
    np.testing.assert_array_equal(u, hash_uniform(np.arange(10000), 4))
    assert u.min() >= -1 and u.max() < 1 and abs(u.mean()) < 0.02
    assert not np.array_equal(u, hash_uniform(np.arange(10000), 4, key=1))


def test_same_index_same_image(fake_mnist):
    a, b = InfiniteMNIST(fake_mnist), InfiniteMNIST(fake_mnist, chunk=7)
    first = a.first_deformed
    index = np.array([first + 5, 10**12 + 3, 12, a.n_test + 1, first + 5])
    images = a.images(index)
    np.testing.assert_array_equal(images, b.images(index[::-1])[::-1])
    np.testing.assert_array_equal(images[0], images[-1])
    assert images.shape == (5, 784) and images.dtype == np.float32
    assert images.min() >= 0 and images.max() <= 1


def test_original_and_deformed_ranges(fake_mnist):
    inf = InfiniteMNIST(fake_mnist)
    N_TEST, FIRST_DEFORMED = inf.n_test, inf.first_deformed
    np.testing.assert_allclose(inf.images(np.array([3]))[0],
                               fake_mnist.test_images[3].ravel() / 255, atol=1e-6)
    np.testing.assert_allclose(inf.images(np.array([N_TEST + 4]))[0],
                               fake_mnist.train_images[4].ravel() / 255, atol=1e-6)
    deformed = inf.images(np.array([FIRST_DEFORMED + 4]))[0]
    assert not np.allclose(deformed, fake_mnist.train_images[4].ravel() / 255)
    assert inf.labels(np.array([FIRST_DEFORMED + 4]))[0] == fake_mnist.train_labels[4]


def test_training_indices_never_reach_the_test_range(fake_mnist):
    inf = InfiniteMNIST(fake_mnist)
    index = inf.sample_train_index(100000, np.random.default_rng(0))
    N_TEST = inf.n_test
    assert index.min() >= N_TEST
    sevens = inf.sample_train_index(1000, np.random.default_rng(1), digit=7)
    assert sevens.min() >= N_TEST and (inf.labels(sevens) == 7).all()


def test_sixty_thousand_samples_in_a_few_seconds(fake_mnist):
    inf = InfiniteMNIST(fake_mnist)
    index = inf.sample_train_index(60000, np.random.default_rng(0))
    start = time.perf_counter()
    inf.images(index)
    assert time.perf_counter() - start < 10
