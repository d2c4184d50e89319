"""Data: interaction logs, MNIST files and the infinite-MNIST generator."""

from iglearn.data.logs import InteractionLog

__all__ = ["InteractionLog"]
