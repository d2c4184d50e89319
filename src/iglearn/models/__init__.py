"""Model classes (Appendix B): softmax policies and sigmoid reward decoders."""

from iglearn.models.decoders import Decoder, LinearDecoder, MLPDecoder, make_decoder
from iglearn.models.policies import LinearPolicy, MLPPolicy, Policy, make_policy

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
