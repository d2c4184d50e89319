"""Event ids: UUIDs of version 7 that sort by the time they were made."""

import time
import uuid

from iglearn.service.ids import new_event_id


def test_an_event_id_is_a_version_7_uuid_in_hex():
    made = time.time()
    value = new_event_id()
    parsed = uuid.UUID(hex=value)
    assert value == parsed.hex and len(value) == 32
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert abs(int(value[:12], 16) / 1000 - made) < 1.0  # the first 48 bits: Unix ms


def test_ids_made_later_sort_after_and_none_repeats():
    earlier = [new_event_id() for _ in range(1000)]
    time.sleep(0.002)
    later = new_event_id()
    assert max(earlier) < later
    assert len(set(earlier)) == len(earlier)
    # the 74 random bits differ between ids of the same millisecond
    same_ms = [i for i in earlier if i[:12] == earlier[0][:12]]
    assert len({i[13:16] + i[17:] for i in same_ms}) == len(same_ms)
