"""Where a fit runs: the CPU, a CUDA GPU or Apple's MPS.

Logs stay in host memory; a fit moves each mini-batch (and each chunk of a full pass) to the
device as it needs it, and the fitted models come back to the CPU, so that saving, predicting
and every result type are the same whatever the device. On the CPU nothing is moved: the
results are those of a fit without a device setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iglearn.errors import IGLearnError

if TYPE_CHECKING:
    import torch

DEVICES = ("cpu", "cuda", "mps", "auto")
"""The device settings: 'auto' is CUDA if available, else MPS if available, else the CPU."""


def mps_available() -> bool:
    """Whether Apple's Metal backend is usable."""
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(name: str) -> torch.device:
    """The torch device a ``device`` setting names; an error naming the fix when it is not
    available here."""
    import torch

    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps") if mps_available() else torch.device("cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise IGLearnError("device 'cuda': no CUDA GPU is available to this torch build; use "
                           "device 'cpu' or 'auto'")
    if name == "mps" and not mps_available():
        raise IGLearnError("device 'mps': Apple's MPS backend is not available here; use "
                           "device 'cpu' or 'auto'")
    if name not in DEVICES:
        raise IGLearnError(f"device {name!r} is not one of {', '.join(DEVICES)}")
    return torch.device(name)


def check_device(name: object) -> None:
    """An error unless ``name`` is one of :data:`DEVICES` (availability is checked when a fit
    starts)."""
    if name not in DEVICES:
        raise IGLearnError(f"device {name!r} is not one of {', '.join(DEVICES)}")
