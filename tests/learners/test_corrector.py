"""The data-driven corrector (Appendix B) and its reference: a re-fit keeps the orientation
of the model it replaces unless the log clearly says otherwise."""

import dataclasses
import warnings

import numpy as np
import pytest
import torch

from iglearn import BatchIGL, IGLearnError, InteractionLog
from iglearn.learners.corrector import (
    Shares,
    action_explained,
    decoded_shares,
    oriented_flip,
    reward_share_bound,
    share_excess,
)
from iglearn.learners.stream import training_data
from iglearn.models import make_decoder
from iglearn.models.stacked import stack


def shares(above, effective, agreement=None) -> Shares:
    above = torch.tensor(above, dtype=torch.float64)
    return Shares(above, 1 - above, torch.tensor(effective, dtype=torch.float64),
                  None if agreement is None else torch.tensor(agreement, dtype=torch.float64),
                  torch.full_like(above, float("nan")))  # the mean of psi: not read here


def test_without_a_reference_the_corrector_flips_above_one_half():
    flip = oriented_flip(shares([0.49, 0.51, 0.9], [4.0, 4.0, 4.0]), confidence=1.0,
                         n_actions=10)
    assert flip.tolist() == [False, True, True]


def test_with_a_reference_only_clear_evidence_turns_against_it():
    # standard error 0.5 / sqrt(16) = 0.125: 0.6 is unclear, 0.9 and 0.2 are clear
    flip = oriented_flip(shares([0.6, 0.6, 0.9, 0.2, 0.4], [16.0, 16.0, 16.0, 16.0, 16.0],
                                [0.1, 0.9, 0.9, 0.1, 0.2]), confidence=1.0,
                         n_actions=10)
    assert flip.tolist() == [True, False, True, False, True]
    # more interactions make the same share clear evidence
    clear = oriented_flip(shares([0.6], [400.0], [0.9]), confidence=1.0, n_actions=10)
    assert clear.tolist() == [True]


def test_with_two_actions_and_a_reference_only_the_agreement_decides():
    # half of the feedback is a reward either way: the statistic is no evidence at K = 2
    found = shares([0.6, 0.9, 0.2, 0.4], [400.0] * 4, [0.9, 0.9, 0.1, 0.2])
    assert oriented_flip(found, confidence=1.0, n_actions=2).tolist() == [False, False, True,
                                                                           True]
    assert oriented_flip(found, confidence=1.0, n_actions=3).tolist() == [True, True, False,
                                                                         False]


def two_action_log(n: int, seed: int) -> InteractionLog:
    """K = 2 classification: under uniform play half of the feedback is a reward, so the
    log cannot tell the decoder's orientation."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    a = rng.integers(0, 2, n)
    reward = (a == x[:, :2].argmax(1)).astype(np.float32)
    y = (np.stack([reward, 1 - reward], 1) + rng.normal(scale=0.1, size=(n, 2))
         ).astype(np.float32)
    return InteractionLog(x, a, np.full(n, 0.5), y, 2, reward=reward)


def test_decoded_shares_count_the_interactions_and_the_agreement():
    log = two_action_log(300, 0)
    data = training_data([log], "feedback")
    decoder = make_decoder("linear", 2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        decoder.net.weight.copy_(torch.tensor([[1.0, -1.0]]))
        decoder.net.bias.zero_()
    same = decoded_shares(stack([decoder]), data, 2, reference=stack([decoder]))
    assert same.effective.item() == pytest.approx(300)   # uniform weights: every row counts
    assert same.agreement.item() == 1.0
    assert same.above.item() == pytest.approx(log.reward.mean(), abs=0.01)
    with torch.no_grad():  # the unweighted mean of psi over the log
        psi = decoder(torch.as_tensor(log.feedback, dtype=torch.float32)).double()
    assert same.mean.item() == pytest.approx(psi.mean().item())
    opposite = make_decoder("linear", 2, torch.Generator().manual_seed(0))
    opposite.load_state_dict(decoder.state_dict())
    opposite.flipped.fill_(True)
    against = decoded_shares(stack([decoder]), data, 2, reference=stack([opposite]))
    assert against.agreement.item() == 0.0 and against.above.item() == same.above.item()
    assert decoded_shares(stack([decoder]), data, 2).agreement is None


def eta_squared(psi: np.ndarray, action: np.ndarray, weight: np.ndarray, k: int) -> float:
    """The weighted correlation ratio of psi on the action, by its definition."""
    mean = np.average(psi, weights=weight)
    by_action = [np.average(psi[action == a], weights=weight[action == a]) for a in range(k)]
    between = sum(weight[action == a].sum() * (by_action[a] - mean) ** 2 for a in range(k))
    return float(between / np.sum(weight * (psi - mean) ** 2))


def by_action_sums(psi: np.ndarray, action: np.ndarray, weight: np.ndarray, k: int
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    weights = np.bincount(action, weight, k)
    sums = np.bincount(action, weight * psi, k)
    return (torch.tensor(weights[None]), torch.tensor(sums[None]),
            torch.tensor([np.sum(weight * psi * psi)]))


def test_action_explained_is_the_correlation_ratio_of_psi_on_the_action():
    rng = np.random.default_rng(0)
    action = rng.integers(0, 4, 500)
    weight = rng.uniform(0.5, 2.0, 500)
    psi = rng.uniform(size=500) * (1 + action) / 4
    got = action_explained(*by_action_sums(psi, action, weight, 4)).item()
    assert got == pytest.approx(eta_squared(psi, action, weight, 4))
    assert 0.05 < got < 0.95
    # psi a function of the action: all explained; a constant psi: nothing to explain
    assert action_explained(*by_action_sums(action / 3.0, action, weight, 4)).item() == (
        pytest.approx(1.0))
    assert action_explained(*by_action_sums(np.full(500, 0.3), action, weight, 4)).item() == 0.0
    # every action's feedback decoded alike: nothing explained
    each = np.repeat(np.arange(4), 100)
    alike = np.tile(rng.uniform(size=100), 4)
    assert action_explained(*by_action_sums(alike, each, np.ones(400), 4)).item() == (
        pytest.approx(0.0, abs=1e-9))


def test_decoded_shares_weigh_the_action_share_to_uniform_play():
    log = two_action_log(400, 2)
    probability = np.where(log.action == 0, 0.8, 0.2)  # logged by a skewed policy
    log = InteractionLog(log.context, log.action, probability, log.feedback, 2)
    decoder = make_decoder("linear", 2, torch.Generator().manual_seed(0))
    shares = decoded_shares(stack([decoder]), training_data([log], "feedback"), 2,
                            by_action=True)
    with torch.no_grad():
        psi = decoder(torch.as_tensor(log.feedback)).double().numpy()
    assert shares.explained.item() == pytest.approx(
        eta_squared(psi, log.action, 1.0 / probability, 2))
    assert decoded_shares(stack([decoder]), training_data([log], "feedback"), 2).explained is None


def test_a_refit_keeps_the_reference_orientation_where_the_log_cannot_tell():
    log = two_action_log(300, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = BatchIGL(seed=0, max_restarts=0).fit(log)
        for flipped in (False, True):
            if flipped:
                reference.decoder_.flipped.logical_not_()
            refit = BatchIGL(seed=5, max_restarts=0, reference_confidence=3.0)
            refit.fit(log, reference=reference)
            alike = np.mean((refit.decode(log.feedback) > 0.5)
                            == (reference.decode(log.feedback) > 0.5))
            assert alike > 0.9, (flipped, alike)


def test_an_unfitted_reference_is_refused():
    with pytest.raises(IGLearnError, match="reference model is not fitted"):
        BatchIGL(seed=0).fit(two_action_log(50, 2), reference=BatchIGL())


def test_a_reference_whose_decoder_reads_other_feedback_is_refused_naming_both_widths():
    """A reference fitted on feedback of another width raised torch's RuntimeError (mat1 and
    mat2 shapes cannot be multiplied) from inside the fit."""
    log = two_action_log(100, 2)
    wider = dataclasses.replace(log, feedback=np.hstack([log.feedback, log.feedback]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = BatchIGL(seed=0, max_restarts=0).fit(wider)
    with pytest.raises(IGLearnError, match=r"^interaction log: its feedback vectors have 2 "
                                           r"values, but the reference model's decoder reads 4; "
                                           r"pass the model fitted on this log's earlier"):
        BatchIGL(seed=0).fit(log, reference=reference)


def test_reward_share_bound_lies_between_one_right_action_and_one_half():
    for k in (3, 4, 10, 50):
        assert 1 / k < reward_share_bound(k) < 0.5
    assert reward_share_bound(10) == pytest.approx(0.2236, abs=1e-4)


def test_share_excess_orients_and_spares_decoders_that_follow_the_action():
    # four trials, K = 10 (bound 0.224): within it; beyond it; beyond it once oriented (70 %
    # above one half reads as 30 %); beyond it but following the action (eta^2 0.9)
    above = torch.tensor([0.1, 0.3, 0.7, 0.3], dtype=torch.float64)
    shares = Shares(above, 1 - above, torch.full((4,), 100.0), None,
                    torch.full((4,), 0.2), torch.tensor([0.01, 0.01, 0.01, 0.9]))
    excess = share_excess(shares, 10)
    assert excess[0] == 0.0 and excess[3] == 0.0
    assert excess[1] == pytest.approx(0.3 - reward_share_bound(10))
    assert excess[2] == pytest.approx(0.3 - reward_share_bound(10))
    assert share_excess(shares, 2) == [0.0] * 4
    with pytest.raises(ValueError, match="by action"):
        share_excess(shares._replace(explained=None), 10)


def _right_action(log: InteractionLog) -> np.ndarray:
    return log.context[:, :2].argmax(1)  # the rewarded action of two_action_log's contexts


@pytest.mark.parametrize("name", ["igl", "vi-igl"])
def test_orient_chooses_a_two_action_fits_direction_from_known_rewards(tmp_path, name):
    from dataclasses import replace

    from iglearn.learners.vi_igl import VIIGL

    cls = {"igl": BatchIGL, "vi-igl": VIIGL}[name]
    log, test = two_action_log(600, 0), two_action_log(2000, 2)
    labelled = replace(two_action_log(40, 1), reward=None)
    labelled = replace(labelled, label=_right_action(labelled))  # the label alone will do
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # K = 2: the sign is not identified, as it warns
        learner = cls(seed=0).fit(log)

    def accuracy() -> float:
        return float(np.mean(learner.predict(test.context) == _right_action(test)))

    split = max(accuracy(), 1 - accuracy())
    assert split > 0.9  # the split is learnt, in one direction or the other
    first = learner.orient(labelled)
    assert first.rows == 40 and first.agreement > 0.8 and accuracy() == pytest.approx(split)
    # turned the wrong way by rewards read backwards, then turned back by the right ones
    backwards = replace(two_action_log(40, 1), reward=1 - two_action_log(40, 1).reward)
    assert learner.orient(backwards).flipped and accuracy() == pytest.approx(1 - split)
    again = learner.orient(labelled)
    assert again.flipped and again.agreement == pytest.approx(first.agreement)
    assert accuracy() == pytest.approx(split)
    assert not learner.orient(labelled).flipped  # already oriented: nothing changes
    learner.save(tmp_path / name)
    loaded = cls.load(tmp_path / name)
    assert np.array_equal(loaded.predict(test.context), learner.predict(test.context))


def test_orient_refuses_what_it_cannot_read():
    from dataclasses import replace

    with pytest.raises(IGLearnError, match="not fitted yet"):
        BatchIGL().orient(two_action_log(10, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = BatchIGL(seed=0, max_restarts=0).fit(two_action_log(200, 0))
    with pytest.raises(IGLearnError, match="reward is known: a 'reward' column, or a 'label'"):
        learner.orient(replace(two_action_log(10, 1), reward=None))
    rng = np.random.default_rng(0)
    three = InteractionLog(rng.normal(size=(30, 4)).astype(np.float32), rng.integers(0, 3, 30),
                           np.full(30, 1 / 3), rng.normal(size=(30, 2)).astype(np.float32), 3,
                           reward=np.zeros(30, np.float32))
    with pytest.raises(IGLearnError, match="with K = 3 the corrector chooses it"):
        learner.orient(three)


def test_a_refit_keeps_the_direction_of_its_oriented_reference():
    """With two actions a fit's direction is open; a re-fit that takes an oriented model as
    its reference (as the service's re-fits take the served model) reads the reward as the
    reference does, whichever way that is."""
    from dataclasses import replace

    log, grown, test = two_action_log(600, 0), two_action_log(900, 3), two_action_log(2000, 2)
    labelled = two_action_log(40, 1)
    backwards = replace(labelled, reward=1 - labelled.reward)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for known, right in ((labelled, True), (backwards, False)):
            reference = BatchIGL(seed=0).fit(log)
            reference.orient(known)
            refit = BatchIGL(seed=5).fit(grown, reference=reference)
            accuracy = float(np.mean(refit.predict(test.context) == _right_action(test)))
            assert (accuracy > 0.9) if right else (accuracy < 0.1), (right, accuracy)
