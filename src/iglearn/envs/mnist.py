"""The paper's environments on MNIST digits, and scikit-learn's bundled digits offline."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from iglearn.data.mnist import load_mnist
from iglearn.envs.classification import ArraySource, ClassificationEnvironment, LabelFeedback
from iglearn.errors import IGLearnError

if TYPE_CHECKING:
    from iglearn.data.infimnist import InfiniteMNIST

# Feedback of the paper's MNIST task (Section 5): an image of "1" if r = 1, of "0" otherwise.
PAPER_FEEDBACK: tuple[dict[int, float], dict[int, float]] = ({1: 1.0}, {0: 1.0})


class InfiniteMNISTSource:
    """Draws deformed training digits from infinite MNIST."""

    dim = 784

    def __init__(self, infinite: InfiniteMNIST):
        self.infinite = infinite

    def draw(self, n: int, rng: np.random.Generator,
             label: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        index = self.infinite.sample_train_index(n, rng, digit=label)
        return self.infinite.images(index), self.infinite.labels(index)


def mnist_environment(data_dir: str | Path | None = None,
                      feedback: tuple[Mapping[int, float], Mapping[int, float]] = PAPER_FEEDBACK,
                      ) -> ClassificationEnvironment:
    """The paper's MNIST environment: contexts and feedback images from infinite MNIST,
    accuracy on the 10000 MNIST test images. ``feedback`` is (mixture if r = 1, if r = 0)."""
    from iglearn.data.infimnist import InfiniteMNIST  # torch: imported when first needed

    mnist = load_mnist(data_dir)
    source = InfiniteMNISTSource(InfiniteMNIST(mnist))
    test = (mnist.test_images.reshape(-1, 784).astype(np.float32) / 255.0, mnist.test_labels)
    return ClassificationEnvironment(source, LabelFeedback(source, *feedback), test, 10)


def digits_environment(feedback: tuple[Mapping[int, float], Mapping[int, float]] = PAPER_FEEDBACK,
                       test_fraction: float = 0.3) -> ClassificationEnvironment:
    """The same task on scikit-learn's bundled 8x8 digits (1797 images; always offline).

    The last ``test_fraction`` of the images are held out for accuracy; contexts and feedback
    images are drawn from the rest.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    features = (digits.data / 16.0).astype(np.float32)
    split = int(round(len(features) * (1 - test_fraction)))
    source = ArraySource(features[:split], digits.target[:split])
    test = (features[split:], digits.target[split:])
    return ClassificationEnvironment(source, LabelFeedback(source, *feedback), test, 10)


DATASETS = ("mnist", "digits")


@lru_cache(maxsize=4)
def make_environment(dataset: str, data_dir: str | Path | None = None
                     ) -> ClassificationEnvironment:
    """The environment named by ``dataset`` ('mnist', the paper's infinite MNIST, or
    'digits', scikit-learn's bundled digits), built once per process."""
    if dataset == "mnist":
        return mnist_environment(data_dir)
    if dataset == "digits":
        return digits_environment()
    raise IGLearnError(f"unknown dataset {dataset!r}; choose "
                       f"{' or '.join(repr(name) for name in DATASETS)} (the other "
                       f"environments, such as 'bci': iglearn.envs.named.named_environment)")
