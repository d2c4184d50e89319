"""Logs of personalised feedback: rewards in [-1, 1] and the definitely-bad flag."""

import json

import numpy as np
import pytest

from iglearn import IGLearnError, InteractionLog
from iglearn.data.formats import read_log, write_table

TOPICS = ("politics", "sports", "music", "food", "finance", "health", "camping")


def vw_line(user: str, chosen: int, feedback: str, probability: float) -> str:
    """A learn line as VW's IGL simulator (igl_simulator.cc) writes it."""
    multi = ", ".join(f'{{"Action": {{"action={t}": 1}}}}' for t in TOPICS)
    bad = "true" if feedback == "dislike" else "false"
    return (f'{{"_label_cost": 0,  "_label_probability": {probability}, "_label_Action": '
            f'{chosen + 1}, "_labelIndex": {chosen}, "o": [{{"v": {{"v={feedback}": 1}}, '
            f'"_definitely_bad": {bad}}}], "a": [{chosen + 1}, 1, 2], "c": {{"User": '
            f'{{"user={user}": 1, "time=morning" : 1}}, "_multi": [{multi}]}}, '
            f'"p":[{probability}, 0.1, 0.1]}}')


def test_reads_vw_igl_simulator_lines_as_they_are(tmp_path):
    path = tmp_path / "igl.dsjson"
    path.write_text("\n".join([vw_line("Tom", 2, "dislike", 0.0285714),
                               vw_line("Anna", 2, "click", 0.828571),
                               vw_line("Tom", 0, "none", 0.828571)]) + "\n")
    log = read_log(path)
    assert log.n_actions == 7 and len(log) == 3
    np.testing.assert_array_equal(log.action, [2, 2, 0])
    np.testing.assert_array_equal(log.definitely_bad, [True, False, False])
    np.testing.assert_allclose(log.probability, [0.0285714, 0.828571, 0.828571])
    # three feedback tokens, one-hot; two users and one time of day
    assert log.feedback.shape == (3, 3) and log.context.shape == (3, 3)
    np.testing.assert_array_equal(log.feedback.sum(1), 1)


def test_a_line_without_the_definitely_bad_flag_is_not_flagged(tmp_path):
    """VW's flag is optional: lines with and without it mix, one without it reads false."""
    path = tmp_path / "igl.dsjson"
    unflagged = vw_line("Tom", 0, "none", 0.8).replace(', "_definitely_bad": false', "")
    path.write_text("\n".join([unflagged, vw_line("Tom", 2, "dislike", 0.03), unflagged,
                               vw_line("Anna", 1, "click", 0.8)]) + "\n")
    log = read_log(path)
    np.testing.assert_array_equal(log.definitely_bad, [False, True, False, False])
    np.testing.assert_array_equal(log.action, [0, 2, 0, 1])
    path.write_text(unflagged + "\n")
    assert read_log(path).definitely_bad is None


def test_a_label_index_that_disagrees_with_the_label_action_is_refused(tmp_path):
    path = tmp_path / "igl.dsjson"
    wrong = vw_line("Anna", 4, "click", 0.8).replace('"_labelIndex": 4', '"_labelIndex": 0')
    path.write_text("\n".join([vw_line("Tom", 2, "dislike", 0.03), wrong]) + "\n")
    with pytest.raises(IGLearnError, match=r"igl.dsjson, line 2: '_labelIndex' is 0 but "
                                           r"'_label_Action' is 5; .* _label_Action as "
                                           r"_labelIndex \+ 1"):
        read_log(path)


def small(**changes) -> InteractionLog:
    n = 8
    rng = np.random.default_rng(0)
    fields = dict(context=rng.normal(size=(n, 3)), action=np.arange(n) % 3,
                  probability=np.full(n, 1 / 3), feedback=rng.normal(size=(n, 2)),
                  n_actions=3, reward=np.array([1, 0, -1, 0, 1, -1, 0, 0.5]),
                  definitely_bad=np.array([0, 0, 1, 0, 0, 1, 0, 0], dtype=bool))
    fields.update(changes)
    return InteractionLog(**fields)


def test_reward_minus_one_is_accepted_and_two_rejected():
    assert small().reward.min() == -1
    with pytest.raises(IGLearnError, match=r"field 'reward' holds 2 at row 3, outside "
                                           r"\[-1, 1\]"):
        small(reward=np.array([1, 0, -1, 2, 1, -1, 0, 0]))


def test_definitely_bad_must_be_boolean():
    with pytest.raises(IGLearnError, match="'definitely_bad' holds 2 at row 1, not a boolean"):
        small(definitely_bad=np.array([0, 2, 0, 0, 0, 0, 0, 0]))


@pytest.mark.parametrize("suffix", [".npz", ".parquet", ".dsjson", ".csv"])
def test_definitely_bad_and_negative_rewards_round_trip(tmp_path, suffix):
    log = small()
    write_table(log, tmp_path / f"log{suffix}")
    back = read_log(tmp_path / f"log{suffix}")
    np.testing.assert_array_equal(back.definitely_bad, log.definitely_bad)
    np.testing.assert_allclose(back.reward, log.reward)
    if suffix == ".dsjson":
        first = json.loads((tmp_path / "log.dsjson").read_text().splitlines()[2])
        assert first["o"][0]["_definitely_bad"] is True


def test_a_log_without_the_flag_has_none():
    assert small(definitely_bad=None).definitely_bad is None
