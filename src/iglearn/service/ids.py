"""Event ids: the one way iglearn makes a new one (the service for a decision sent without
one, the Python client before its first attempt, the demo)."""

from __future__ import annotations

import os
import time

_RAND_A_BITS, _RAND_B_BITS = 12, 62
_MASK_48 = (1 << 48) - 1


def new_event_id() -> str:
    """A new event id: a UUID of version 7 (RFC 9562, section 5.7) as 32 lowercase hex
    digits, the form ``uuid.uuid4().hex`` has.

    Its first 48 bits are the Unix time in milliseconds and the other 74 free bits are
    random (``os.urandom``), so ids made later sort after those made earlier. A database
    adds each new id to its unique index at the index's end, where the previous ones were
    added, instead of at a random place: a commit of a group of decisions writes one index
    page instead of one per decision. Ids made within one millisecond are ordered at random
    among themselves; two ids are equal with probability about 2^-74 even when made in the
    same millisecond."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")  # 80 bits: 12 for rand_a, 62 for rand_b
    value = ((millis & _MASK_48) << 80 | 0x7 << 76
             | (rand >> (80 - _RAND_A_BITS)) << 64
             | 0b10 << 62 | rand & ((1 << _RAND_B_BITS) - 1))
    return f"{value:032x}"
