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


def test_a_group_stops_once_one_of_its_trials_settles_it():
    # trials 0 and 1 are rival starts of one log, 2 and 3 of another. Trial 1's second
    # attempt settles its group, which stops trial 0 too; trial 2 passes at its first
    # attempt without settling, so trial 3 goes on
    passes = {0: [False] * 4, 1: [False] * 4, 2: [True], 3: [False] * 4}
    settles = {0: [False] * 4, 1: [False, True, False, False], 2: [False], 3: [False] * 4}
    seen: list[list[int]] = []

    def attempt(number: int, pending: list[int]) -> list[Attempt[str]]:
        seen.append(list(pending))
        return [Attempt(f"t{t}a{number}", -number, passes[t][number], number,
                        settles[t][number]) for t in pending]

    best, records = adaptive_restart(4, 3, attempt, groups=[0, 0, 1, 1])
    assert seen == [[0, 1, 2, 3], [0, 1, 3], [3], [3]]
    assert [b.fitted for b in best] == ["t0a0", "t1a0", "t2a0", "t3a0"]
    assert records == [[0, 1], [0, 1], [0], [0, 1, 2, 3]]
    # without groups an attempt that settles stops nothing but its own trial, if it passed
    seen.clear()
    adaptive_restart(4, 3, attempt)
    assert seen == [[0, 1, 2, 3], [0, 1, 3], [0, 1, 3], [0, 1, 3]]
