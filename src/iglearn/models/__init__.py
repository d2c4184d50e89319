"""Model classes (Appendix B): softmax policies and sigmoid reward decoders.

The names below are imported on first use (they import torch), so that the light modules of
this package (:mod:`iglearn.models.kinds`, :mod:`iglearn.models.io`'s reading of
``model.json``) import without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iglearn.lazy import lazy_names

if TYPE_CHECKING:
    from iglearn.models.decoders import Decoder, LinearDecoder, MLPDecoder, make_decoder
    from iglearn.models.policies import LinearPolicy, MLPPolicy, Policy, make_policy

# Each public name and the module it comes from.
_SOURCES = {
    "Decoder": "iglearn.models.decoders",
    "LinearDecoder": "iglearn.models.decoders",
    "MLPDecoder": "iglearn.models.decoders",
    "make_decoder": "iglearn.models.decoders",
    "LinearPolicy": "iglearn.models.policies",
    "MLPPolicy": "iglearn.models.policies",
    "Policy": "iglearn.models.policies",
    "make_policy": "iglearn.models.policies",
}

__all__ = [
    "Decoder",
    "LinearDecoder",
    "LinearPolicy",
    "MLPDecoder",
    "MLPPolicy",
    "Policy",
    "make_decoder",
    "make_policy",
]

__getattr__, __dir__ = lazy_names(globals(), _SOURCES)
