"""The adaptive restart's loop: who is attempted again, what is kept, what is recorded."""

import pytest

from iglearn.learners.restarts import Attempt, adaptive_restart, best_of, diverged

# trial 0 passes at once; trial 1 at its third attempt; trial 2 never
RANKS = {0: [5.0], 1: [1.0, 3.0, 2.0], 2: [4.0, 4.0, 1.0, 4.0]}
PASSES = {0: [True], 1: [False, False, True], 2: [False] * 4}


def ranked(seen: list[tuple[list[int], list[int]]]):
    def attempt(numbers: list[int], pending: list[int]) -> list[Attempt[str]]:
        seen.append((list(numbers), list(pending)))
        return [Attempt(f"t{t}a{n}", RANKS[t][n] if n < len(RANKS[t]) else 9.0,
                        PASSES[t][n] if n < len(PASSES[t]) else True,
                        RANKS[t][n] if n < len(RANKS[t]) else 9.0)
                for n, t in zip(numbers, pending, strict=True)]
    return attempt


def test_trials_restart_until_they_pass_and_keep_their_best_attempt():
    seen: list[tuple[list[int], list[int]]] = []
    best, records = adaptive_restart(3, 3, ranked(seen))
    assert seen == [([0, 0, 0], [0, 1, 2]), ([1, 1], [1, 2]), ([2, 2], [1, 2]), ([3], [2])]
    assert [b.fitted for b in best] == ["t0a0", "t1a1", "t2a0"]  # ties keep the first
    assert records == [[5.0], [1.0, 3.0, 2.0], [4.0, 4.0, 1.0, 4.0]]


@pytest.mark.parametrize("ahead", [2, 3, 4, 9])
def test_attempts_fitted_ahead_keep_and_record_what_one_at_a_time_would(ahead):
    seen: list[tuple[list[int], list[int]]] = []
    best, records = adaptive_restart(3, 3, ranked(seen), ahead=ahead)
    # the same outcome: the attempts after one that passed were fitted but are dropped
    assert [b.fitted for b in best] == ["t0a0", "t1a1", "t2a0"]
    assert records == [[5.0], [1.0, 3.0, 2.0], [4.0, 4.0, 1.0, 4.0]]
    # every pending trial's next `ahead` attempts (at most max_restarts + 1) in one call,
    # attempt by attempt
    span = min(ahead, 4)
    first = ([n for n in range(span) for _ in range(3)], [0, 1, 2] * span)
    assert seen[0] == first
    rest = {2: [([2, 2, 3, 3], [1, 2, 1, 2])],  # trials 1 and 2 failed their first two
            3: [([3], [2])],  # trial 1 passed at its third: trial 2 alone goes on
            4: []}[span]
    assert seen[1:] == rest


def test_no_restart_allowed_means_one_attempt_each():
    def attempt(numbers: list[int], pending: list[int]) -> list[Attempt[int]]:
        return [Attempt(t, 0.0, False, n) for n, t in zip(numbers, pending, strict=True)]

    for ahead in (1, 3):
        best, records = adaptive_restart(2, 0, attempt, ahead=ahead)
        assert [b.fitted for b in best] == [0, 1] and records == [[0], [0]]


@pytest.mark.parametrize("ahead", [1, 2])
def test_a_group_stops_once_one_of_its_trials_settles_it(ahead):
    # trials 0 and 1 are rival starts of one log, 2 and 3 of another. Trial 1's second
    # attempt settles its group, which stops trial 0 too; trial 2 passes at its first
    # attempt without settling, so trial 3 goes on
    passes = {0: [False] * 4, 1: [False] * 4, 2: [True] * 4, 3: [False] * 4}
    settles = {0: [False] * 4, 1: [False, True, False, False], 2: [False] * 4,
               3: [False] * 4}
    seen: list[list[int]] = []

    def attempt(numbers: list[int], pending: list[int]) -> list[Attempt[str]]:
        seen.append(list(pending))
        return [Attempt(f"t{t}a{n}", -n, passes[t][n], n, settles[t][n])
                for n, t in zip(numbers, pending, strict=True)]

    best, records = adaptive_restart(4, 3, attempt, groups=[0, 0, 1, 1], ahead=ahead)
    if ahead == 1:
        assert seen == [[0, 1, 2, 3], [0, 1, 3], [3], [3]]
    else:  # two attempts of every pending trial a call
        assert seen == [[0, 1, 2, 3] * 2, [3, 3]]
    assert [b.fitted for b in best] == ["t0a0", "t1a0", "t2a0", "t3a0"]
    assert records == [[0, 1], [0, 1], [0], [0, 1, 2, 3]]
    # without groups an attempt that settles stops nothing but its own trial, if it passed
    seen.clear()
    adaptive_restart(4, 3, attempt)
    assert seen == [[0, 1, 2, 3], [0, 1, 3], [0, 1, 3], [0, 1, 3]]


NAN = float("nan")


@pytest.mark.parametrize("ranks, kept", [
    ([NAN, -0.5, 0.2, 0.2], 2),          # a first attempt that diverged is replaced
    ([0.1, NAN, -0.3], 0),               # and never replaces one that did not
    ([NAN, NAN], 0),                     # all diverged: the first, as before
    ([(True, 0.2), (True, NAN), (False, 0.9)], 0),   # a tuple rank holding NaN diverged
    ([(True, NAN), (False, -1.0)], 1),
])
def test_a_diverged_attempt_is_never_kept_over_one_that_did_not(ranks, kept):
    def attempt(numbers: list[int], pending: list[int]) -> list[Attempt[int]]:
        return [Attempt(n, ranks[n], False, ranks[n]) for n in numbers]

    best, _ = adaptive_restart(1, len(ranks) - 1, attempt)
    assert best[0].fitted == kept == best_of(ranks)
    assert not diverged(ranks[kept]) or all(map(diverged, ranks))
