"""iglearn's version, read from the installed package's metadata on first use of
``iglearn.__version__`` (importing :mod:`importlib.metadata` costs the command line's start
about a fifth of its time)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("iglearn")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
