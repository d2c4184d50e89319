"""The shared optimiser: stages, and weight decay scaled by inputs per sample."""

import math
import warnings

import numpy as np
import pytest
import torch

from iglearn.errors import IGLearnError
from iglearn.learners import training
from iglearn.learners.training import Optimisation, Stage, optimise, run_stage, stage_epochs
from iglearn.learners.trials import Trials
from iglearn.models.stacked import stack


def _fit(n: int, settings: Optimisation) -> torch.nn.Module:
    # Zero loss: only the weight decay moves the parameters (two trials side by side).
    layer = torch.nn.Linear(50, 2)
    with torch.no_grad():
        layer.weight.fill_(1.0)
        layer.bias.fill_(1.0)
    layers = stack([layer, layer])
    stage = Stage(1, list(layers.parameters()),
                  lambda batch: 0.0 * layers(batch.context).sum((1, 2)))
    data = Trials([torch.zeros(n, 50)] * 2, [torch.zeros(n, dtype=torch.long)] * 2,
                  [torch.ones(n)] * 2, [torch.zeros(n)] * 2)
    optimise([stage], data, settings, [torch.Generator().manual_seed(s) for s in range(2)])
    return layers


def test_weight_decay_grows_with_inputs_per_sample_and_spares_biases():
    settings = Optimisation(epochs=1, max_steps=20, batch_size=100, lr=0.01)
    small, large = _fit(500, settings), _fit(50000, settings)
    assert torch.all(small.bias == 1.0) and torch.all(large.bias == 1.0)
    # 8 * 50 / 500 = 0.8 against 0.008: far more shrinkage on the small data set.
    assert float(small.weight.detach().mean()) < 0.95 < float(large.weight.detach().mean()) < 1.0
    off = _fit(500, Optimisation(epochs=1, max_steps=20, batch_size=100, lr=0.01,
                                 weight_decay_scale=0.0))
    assert torch.all(off.weight == 1.0)


def test_a_stage_scales_the_data_scaled_decay_of_its_scaled_parameters():
    # Zero loss: only the decay moves the weights; the scaled layer's decay is 4 times the
    # other's (8 * 50 / 500 against 4 times that), its learning rate the same.
    plain, scaled = torch.nn.Linear(50, 2), torch.nn.Linear(50, 2)
    layers = [stack([layer]) for layer in (plain, scaled)]
    for layer in layers:
        with torch.no_grad():
            layer.weight.fill_(1.0)
            layer.bias.fill_(1.0)
    params = [p for layer in layers for p in layer.parameters()]
    stage = Stage(1, params, lambda batch: 0.0 * sum(layer(batch.context).sum((1, 2))
                                                      for layer in layers),
                  list(layers[1].parameters()), decay_scale=4.0)
    n = 500
    data = Trials([torch.zeros(n, 50)], [torch.zeros(n, dtype=torch.long)], [torch.ones(n)],
                  [torch.zeros(n)])
    optimise([stage], data, Optimisation(epochs=1, max_steps=20, batch_size=100, lr=0.01),
             [torch.Generator().manual_seed(0)])
    shrunk = [float(layer.weight.detach().mean()) for layer in layers]
    assert shrunk[1] < shrunk[0] < 1.0
    # each step multiplies a weight by 1 - rate * decay: the logs' ratio is the decays'
    assert math.log(shrunk[1]) / math.log(shrunk[0]) == pytest.approx(4.0, rel=0.05)
    assert all(torch.all(layer.bias == 1.0) for layer in layers)


def _run(n: int, loss, settings: Optimisation,
         trials: int = 1) -> tuple[list[int], int, torch.nn.Module]:
    """The epochs ``run_stage`` yields for a one-epoch stage on a linear model with ``trials``
    trials on ``n`` rows of 5 inputs, the steps it took, and the fitted (stacked) model."""
    generator = torch.Generator().manual_seed(0)
    layer = stack([torch.nn.Linear(5, 1) for _ in range(trials)])
    with torch.no_grad():
        for parameter in layer.parameters():
            parameter.zero_()
    x = torch.randn(n, 5, generator=generator)
    target = x @ torch.tensor([1.0, -2.0, 0.5, 0.0, 3.0])
    data = Trials([x] * trials, [torch.zeros(n, dtype=torch.long)] * trials,
                  [torch.ones(n)] * trials, [target] * trials)
    stage = Stage(1, list(layer.parameters()), lambda batch: loss(layer, batch))
    epochs = list(run_stage(stage, data, settings,
                            [torch.Generator().manual_seed(s) for s in range(trials)]))
    per_epoch = -(-n // min(settings.batch_size, n))
    return epochs, (epochs[-1] + 1) * per_epoch, layer


def _steps(n: int, loss, settings: Optimisation) -> tuple[list[int], int]:
    epochs, steps, _ = _run(n, loss, settings)
    return epochs, steps


def _squared_error(layer, batch):
    return ((layer(batch.context)[..., 0] - batch.signal) ** 2).mean(-1)


def _unbounded(layer, batch):
    # keeps falling at the same pace however long it runs: it never plateaus
    return -layer.bias.sum(-1) + 0.0 * layer(batch.context).sum((1, 2))


def test_a_small_easy_stage_stops_once_its_loss_stops_improving():
    settings = Optimisation(max_steps=2000, window=10, batch_size=500, lr=0.05,
                            small_log=0)
    epochs, steps = _steps(200, _squared_error, settings)
    assert stage_epochs(Stage(1, [], _squared_error), 200, settings) == 2000
    assert steps < 1000  # well before the cap
    assert epochs[:3] == [9, 19, 29]  # a record every window of 10 one-step epochs


def test_a_stage_that_keeps_improving_runs_to_its_cap():
    # it may stop in the schedule's last windows, where the learning rate is all but zero
    # and the loss falls by less than 1 % of its fall so far each window
    settings = Optimisation(max_steps=300, window=10, batch_size=500, lr=0.05, tolerance=0.01,
                            small_log=0)
    _, steps = _steps(200, _unbounded, settings)
    assert 0.9 * 300 <= steps <= 300


def test_patience_zero_runs_every_stage_to_its_cap():
    settings = Optimisation(max_steps=300, window=10, batch_size=500, lr=0.05, patience=0,
                            small_log=0)
    _, steps = _steps(200, _squared_error, settings)
    assert steps == 300


def test_a_large_log_runs_exactly_its_epochs_one_record_each():
    # 40 steps an epoch: one epoch already passes a cap of 30, so the stage is not extended
    settings = Optimisation(max_steps=30, window=10, batch_size=50, lr=0.05)
    epochs, steps = _steps(2000, _squared_error, settings)
    assert epochs == [0] and steps == 40


def test_a_small_log_caps_its_extended_stages_and_raises_their_learning_rate():
    settings = Optimisation(max_steps=240, small_log=1000, small_steps=80, small_lr_scale=2.5)
    assert settings.cap(999) == (80, 2.5) and settings.cap(1000) == (240, 1.0)
    assert Optimisation(max_steps=50, small_steps=80).cap(10) == (50, 2.5)
    assert Optimisation(small_log=0).cap(1) == (Optimisation().max_steps, 1.0)
    # A constant gradient: Adam moves the bias by the learning rate each step, so the
    # distance it travels over a stage is proportional to the stage's peak learning rate.

    def travelled(n: int, batch_size: int, scale: float) -> tuple[int, float]:
        settings = Optimisation(max_steps=300, small_log=2500, small_steps=30, window=10,
                                batch_size=batch_size, lr=0.01, patience=0,
                                small_lr_scale=scale)
        _, steps, layer = _run(n, _unbounded, settings)
        return steps, float(layer.bias.detach().sum())

    small = [travelled(200, 500, scale) for scale in (1.0, 3.0)]  # extended to 30 steps
    assert [steps for steps, _ in small] == [30, 30]
    assert small[0][1] > 0 and abs(small[1][1] / small[0][1] - 3.0) < 1e-3, small
    large = [travelled(2000, 50, scale) for scale in (1.0, 3.0)]  # 40 steps: not extended
    assert [steps for steps, _ in large] == [40, 40]
    assert large[0][1] > 0 and abs(large[1][1] / large[0][1] - 1.0) < 1e-6, large


def test_small_log_settings_are_checked():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(IGLearnError, match="small_lr_scale must be a finite number > 0"):
            Optimisation(small_lr_scale=bad)
    with pytest.raises(IGLearnError, match="small_steps must be a whole number >= 1"):
        Optimisation(small_steps=0)
    with pytest.raises(IGLearnError, match="small_log must be a whole number >= 0"):
        Optimisation(small_log=-1)


def test_a_trial_that_stops_early_ends_as_it_would_alone():
    settings = Optimisation(max_steps=400, window=10, batch_size=500, lr=0.05, small_log=0)

    def mixed(layer, batch):  # trial 0 converges, trial 1 keeps improving
        return torch.stack([_squared_error(layer, batch)[0], _unbounded(layer, batch)[1]])
    _, together, both = _run(200, mixed, settings, trials=2)
    _, alone, one = _run(200, _squared_error, settings)
    assert alone < together  # trial 0 stopped while trial 1 ran on
    torch.testing.assert_close(both.weight[0], one.weight[0], rtol=1e-4, atol=1e-5)


def _adamw_path(monkeypatch, fused: bool) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Parameters after 50 AdamW steps on a one-cycle schedule with fixed random gradients,
    two groups of learning rates and weight decay, by the fused kernel or the foreach path."""
    monkeypatch.setattr(training, "FUSED_DEVICES", frozenset({"cpu"} if fused else ()))
    generator = torch.Generator().manual_seed(0)
    params = [torch.randn(shape, generator=generator) for shape in ((1, 4, 6), (1, 4), (1, 1, 6))]
    initial = [p.clone() for p in params]
    groups = [{"params": [p], "lr": lr, "weight_decay": decay}
              for p, lr, decay in zip(params, (0.02, 0.02, 0.002), (0.5, 0.0, 0.5), strict=True)]
    optimiser, schedule = training.AdamW(groups, 1), training.OneCycle(50)
    for _ in range(50):
        for p in params[:2]:  # the last parameter gets no gradient: it must not move
            p.grad = torch.randn(p.shape, generator=generator)
        optimiser.step(*schedule.at(optimiser.steps))
    return initial, params


def test_the_fused_adamw_step_is_the_foreach_step(monkeypatch):
    initial, fused = _adamw_path(monkeypatch, True)
    _, plain = _adamw_path(monkeypatch, False)
    for a, b in zip(fused, plain, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert all(p.grad is None for p in fused)
    assert not torch.equal(fused[0], initial[0]) and not torch.equal(fused[1], initial[1])
    assert torch.equal(fused[2], initial[2])  # no gradient: it stays as it was


def test_a_fused_step_gives_each_trial_the_bits_it_gets_alone():
    # 3 trials of 7 x 5 weights: stacked, a trial's last elements are no tensor's last
    generator = torch.Generator().manual_seed(1)
    start = torch.randn(3, 7, 5, generator=generator)
    grads = [torch.randn(3, 7, 5, generator=generator) for _ in range(20)]

    def fit(weights: torch.Tensor, trials: int, rows: slice) -> torch.Tensor:
        optimiser = training.AdamW([{"params": [weights], "lr": 0.02, "weight_decay": 0.3}],
                                   trials)
        for grad in grads:
            weights.grad = grad[rows].clone()
            optimiser.step(0.7, 0.9)
        return weights

    together = fit(start.clone(), 3, slice(None))
    for t in range(3):
        assert torch.equal(fit(start[t:t + 1].clone(), 1, slice(t, t + 1))[0], together[t])


def _stage_on(n: int, epochs: int) -> tuple[Stage, Trials]:
    generator = torch.Generator().manual_seed(0)
    layer = stack([torch.nn.Linear(5, 1)])
    x = torch.randn(n, 5, generator=generator)
    data = Trials([x], [torch.zeros(n, dtype=torch.long)], [torch.ones(n)], [x[:, 0]])
    return Stage(epochs, list(layer.parameters()),
                 lambda batch: _squared_error(layer, batch)), data


def test_a_progress_bar_counts_every_stage_epoch_even_of_a_stage_that_stops_early(capsys):
    # 4 one-step epochs, then an extended stage on 200 rows that stops long before its cap
    settings = Optimisation(max_steps=2000, window=10, batch_size=500, lr=0.05, small_log=0)
    fixed, data = _stage_on(600, 2)
    extended, small = _stage_on(200, 1)
    generators = [torch.Generator().manual_seed(0)]
    optimise([fixed, fixed], data, Optimisation(max_steps=1, batch_size=300), generators,
             progress="stages")
    err = capsys.readouterr().err
    assert "stages" in err and "4/4" in err
    optimise([extended], small, settings, generators, progress="extended")
    err = capsys.readouterr().err
    assert "extended" in err and "2000/2000" in err  # completed though it stopped early
    optimise([fixed], data, settings, generators)
    assert capsys.readouterr().err == ""  # no bar without a description


def test_a_decay_beyond_one_step_of_the_rate_at_most_zeroes_a_weight():
    # Zero loss on one interaction: 8 * 50 / 1 = 400 per unit rate, 4 times the peak rate's
    # 0.01; unbounded, each step would multiply the weights by 1 - 4 = -3.
    settings = Optimisation(epochs=1, max_steps=20, batch_size=100, lr=0.01)
    weights = _fit(1, settings).weight.detach()
    assert torch.isfinite(weights).all()
    # at most zeroed (up to float rounding of 1 - rate * decay): never grown, never flipped
    assert float(weights.min()) > -1e-6 and float(weights.max()) < 1.0
    groups = training._decay_groups(Stage(1, list(torch.nn.Linear(50, 2).parameters()),
                                          lambda batch: torch.zeros(1)), settings, 1)
    assert all(group["lr"] * group["weight_decay"] <= training.DECAY_STEP_LIMIT
               for group in groups)


@pytest.mark.parametrize("name, d", [("AI-IGL", 784), ("IGL-P", 128), ("IGL", 784),
                                     ("VI-IGL", 784)])
def test_a_few_dozen_interactions_of_many_features_fit_without_diverging(name, d, wide_log):
    # 60 interactions of 784 pixels (IGL-P: 128 x 128 inverse-kinematics products): the
    # data-scaled decays are 8 d / 60, far beyond one step of the learning rate; AI-IGL's and
    # IGL-P's fits diverged to NaN before DECAY_STEP_LIMIT
    from iglearn.experiments.family import make_learner

    log = wide_log(60, d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learner = make_learner(name, np.random.default_rng(0)).fit(log)
    assert np.isfinite(learner.predict_proba(log.context)).all()


def test_no_mini_batch_holds_a_few_rows_left_over():
    """An epoch of 1,501 rows in batches of 500 is four batches, the last two of 251 and 250
    rows, not three of 500 and one of a single row, whose step weighed that row as much as
    a whole batch: a digits log of 1,500 interactions and one more fitted 2021 IGL to 55 to
    83 % against 90 %. With the batches shared out, the one more row changes little."""
    from iglearn import BatchIGL
    from iglearn.envs import digits_environment

    data = Trials([torch.zeros(1501, 2)], [torch.zeros(1501, dtype=torch.long)],
                  [torch.ones(1501)], [torch.zeros(1501)])
    sizes = [batch.action.shape[1] for batch in data.epoch(500, [torch.Generator()])]
    assert sizes == [500, 500, 251, 250]
    env = digits_environment()
    test_x, test_y = env.test_set()
    for seed in range(2):
        log = env.log(1500, np.random.default_rng(seed))
        more = log.subset(np.r_[np.arange(1500), 0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = BatchIGL(seed=seed).fit(log).accuracy(test_x, test_y)
            plus = BatchIGL(seed=seed).fit(more).accuracy(test_x, test_y)
        assert plus > base - 0.03, (seed, base, plus)
