"""The storage interface on each backend (SQLite, and PostgreSQL when installed): the same
calls give the same answers, retention and the log's export included, and the re-fit lease
is held by one storage at a time."""

from __future__ import annotations

import time

import numpy as np

from iglearn.service.storage import Decision, Feedback, FeedbackOutcome, open_storage

from .conftest import D_X, D_Y, K


def decision(event_id: str, at: float, action: int = 0, version: int = 0,
             learnable: bool = True) -> Decision:
    context = np.arange(D_X, dtype=np.float32) + len(event_id)
    return Decision(event_id, context, action, 1 / K, np.full(K, 1 / K), version, False,
                    learnable, at)


def feedback(event_id: str, at: float, value: float = 1.0) -> Feedback:
    return Feedback(event_id, np.full(D_Y, value, np.float32), False, at)


def test_decisions_feedback_counts_and_retention(database):
    storage = open_storage(database)
    try:
        now = time.time()
        old = [decision(f"old-{i}", now - 1000 + i) for i in range(3)]
        new = [decision(f"new-{i}", now + i, action=i % K, version=2, learnable=i != 1)
               for i in range(4)]
        assert storage.add_decisions(old + new) == old + new
        again = storage.add_decisions([decision("new-0", now + 50, action=2), decision("x", now)])
        assert again[0].action == new[0].action and again[0].decided_at == new[0].decided_at
        assert again[1].event_id == "x"
        outcomes = storage.add_feedback(
            [feedback("new-0", now + 1), feedback("new-0", now + 2), feedback("nope", now),
             feedback("new-1", now + 1), feedback("new-2", now + 100), feedback("new-3", now),
             feedback("old-0", now), feedback("old-1", now - 999)], join_window=60)
        assert outcomes == [FeedbackOutcome.JOINED, FeedbackOutcome.DUPLICATE,
                            FeedbackOutcome.UNKNOWN, FeedbackOutcome.JOINED,
                            FeedbackOutcome.LATE, FeedbackOutcome.JOINED, FeedbackOutcome.LATE,
                            FeedbackOutcome.JOINED]
        assert storage.add_feedback([feedback("new-3", now)], 60) == [FeedbackOutcome.DUPLICATE]
        counts = storage.counts()
        assert (counts.decisions, counts.joined, counts.late, counts.learnable) == (8, 4, 2, 3)
        joined = storage.joined()
        assert joined.event_id == ["old-1", "new-0", "new-1", "new-3"]
        assert joined.context.shape == (4, D_X) and joined.feedback.shape == (4, D_Y)
        np.testing.assert_array_equal(joined.context[1], new[0].context)
        np.testing.assert_array_equal(joined.model_version, [0, 2, 2, 2])
        assert storage.joined(learnable_only=True).event_id == ["old-1", "new-0", "new-3"]
        assert storage.joined(since=now).event_id == ["new-0", "new-1", "new-3"]
        assert storage.joined(until=now + 1).event_id == ["old-1", "new-0"]
        assert storage.joined(latest=2).event_id == ["new-1", "new-3"]
        assert len(storage.joined(until=now - 2000)) == 0
        assert storage.delete_before(now - 1) == 3  # retention
        assert storage.counts().decisions == 5
        assert storage.joined().event_id == ["new-0", "new-1", "new-3"]
    finally:
        storage.close()


def test_decisions_and_feedback_stored_together(database):
    """add_interactions stores a group's decisions and joins its feedback (one commit on
    SQLite), with the outcomes add_feedback gives."""
    storage = open_storage(database)
    try:
        now = time.time()
        storage.add_decisions([decision("before", now)])
        stored, outcomes = storage.add_interactions(
            [decision("a", now), decision("b", now)],
            [feedback("before", now + 1), feedback("nope", now), feedback("a", now + 1)], 60.0)
        assert [d.event_id for d in stored] == ["a", "b"]
        assert outcomes == [FeedbackOutcome.JOINED, FeedbackOutcome.UNKNOWN,
                            FeedbackOutcome.JOINED]
        assert storage.add_interactions([], [feedback("a", now + 2)], 60.0) == (
            [], [FeedbackOutcome.DUPLICATE])
        assert storage.add_interactions([], [], 60.0) == ([], [])
        assert storage.joined().event_id == ["before", "a"]
        assert storage.counts().decisions == 3
    finally:
        storage.close()


def test_models_keys_and_state(database):
    storage = open_storage(database)
    try:
        assert storage.served_version() == 0 and storage.models() == []
        for i in range(4):
            record = storage.add_model("igl", 10 * i, 0.5, {"i": i}, bytes([i]) * 10)
            assert record.version == i + 1 and storage.served_version() == i + 1
        storage.serve(2)
        assert storage.served_version() == 2
        assert storage.add_model("igl", 1, 0.1, {}, b"z").version == 5
        storage.serve(2)
        assert storage.prune_models(keep=2) == 2  # 1 and 3 go; 2 is served
        assert [m.version for m in storage.models()] == [2, 4, 5]
        assert storage.model_archive(4) == bytes([3]) * 10
        assert storage.models()[0].summary == {"i": 1}
        storage.add_key("ab" * 32, "client")
        assert storage.keys() == [("ab" * 32, "client")]
        assert storage.state("nothing") is None
        storage.set_state("x", {"a": [1, 2.5]})
        storage.set_state("x", {"a": [3]})
        assert storage.state("x") == {"a": [3]}
        now = time.time()
        storage.add_decisions([decision("c1", now)])
        storage.add_feedback([feedback("c1", now)], 600.0)
        storage.clear()  # the demo's reset: everything but the keys
        assert storage.counts().joined == 0 and len(storage.joined()) == 0
        assert storage.models() == [] and storage.served_version() == 0
        assert storage.state("x") is None and storage.keys() == [("ab" * 32, "client")]
        assert storage.add_model("igl", 1, 0.1, {}, b"y").version == 1
    finally:
        storage.close()


def test_one_refit_lease_holder(database):
    first, second = open_storage(database), open_storage(database)
    try:
        assert first.hold_refit_lease()
        assert not second.hold_refit_lease()
        assert first.hold_refit_lease()  # still held
        first.close()
        deadline = time.monotonic() + 10
        while not second.hold_refit_lease():  # the server notices the closed connection
            assert time.monotonic() < deadline, "the lease was not released"
            time.sleep(0.05)
        third = open_storage(database)
        assert not third.hold_refit_lease()
        third.close()
    finally:
        first.close()
        second.close()
