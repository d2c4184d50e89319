"""The adaptive restart's loop: who is attempted again, what is kept, what is recorded."""

from iglearn.learners.restarts import Attempt, adaptive_restart


def test_trials_restart_until_they_pass_and_keep_their_best_attempt():
    # trial 0 passes at once; trial 1 at its third attempt; trial 2 never
    ranks = {0: [5.0], 1: [1.0, 3.0, 2.0], 2: [4.0, 4.0, 1.0, 4.0]}
    passes = {0: [True], 1: [False, False, True], 2: [False] * 4}
    seen: list[tuple[int, list[int]]] = []

    def attempt(number: int, pending: list[int]) -> list[Attempt[str]]:
        seen.append((number, list(pending)))
        return [Attempt(f"t{t}a{number}", ranks[t][number], passes[t][number],
                        ranks[t][number]) for t in pending]

    best, records = adaptive_restart(3, 3, attempt)
    assert seen == [(0, [0, 1, 2]), (1, [1, 2]), (2, [1, 2]), (3, [2])]
    assert [b.fitted for b in best] == ["t0a0", "t1a1", "t2a0"]  # ties keep the first
    assert records == [[5.0], [1.0, 3.0, 2.0], [4.0, 4.0, 1.0, 4.0]]


def test_no_restart_allowed_means_one_attempt_each():
    def attempt(number: int, pending: list[int]) -> list[Attempt[int]]:
        return [Attempt(t, 0.0, False, number) for t in pending]

    best, records = adaptive_restart(2, 0, attempt)
    assert [b.fitted for b in best] == [0, 1] and records == [[0], [0]]
