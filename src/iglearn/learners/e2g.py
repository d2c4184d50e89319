"""E2G, Explore-Exploit Ground learning (Algorithm 1): online IGL by epoch-greedy.

    for i = 1, 2, ...
        play a uniformly random action on x_t, observe y_t         (line 2)
        D_i = D_{i-1} + {(x_t, a_t, y_t)}                          (line 3)
        (pi_i, psi_i) = argmax  E_D[K psi(y) pi(a|x)] - E_D[psi(y)] (line 4)
        execute pi_i for n_i steps                                  (line 5)

Line 4 is :meth:`BatchIGL.fit_with_restarts` (the corrector and the adaptive restart of
Appendix B) on D_i, warm-started from (pi_{i-1}, psi_{i-1}) with a short optimisation and
re-run from fresh initialisations only when the warm start's indicator falls to the restart
threshold. A tenth of D is held out of the fits to measure the indicator (Eq. 9), an
unbiased estimate of (V(pi) - V(pi_bad)) Delta_psi that a fit memorising a few thousand
samples cannot inflate.
As in Appendix B, line 4 runs every ``update_every`` rounds (100) rather than
every round. The reward is never read: ``learn`` receives feedback vectors.
"""

from __future__ import annotations

import numpy as np
import torch

from iglearn.learners.base import as_tensor, one_trial
from iglearn.learners.batch_igl import BatchIGL
from iglearn.learners.online import FIRST_FIT, REFIT, EpochGreedy
from iglearn.learners.schedules import Schedule
from iglearn.learners.training import Optimisation
from iglearn.models import Decoder
from iglearn.seeding import SeedLike


class E2G(EpochGreedy):
    """Algorithm 1 with a schedule {n_i} (paper, theory or data-driven).

    Args:
        n_actions: K.
        context_dim: dimension of the contexts x.
        feedback_dim: dimension of the feedback vectors y.
        schedule: the schedule; default the paper's fixed warm-up of 4000 rounds.
        update_every: rounds between re-fits of (pi, psi) (Appendix B: 100).
        exploit: 'greedy' (play argmax pi_i, probability 1) or 'softmax' (sample pi_i).
        policy: policy class, 'linear' (the paper's) or 'mlp'.
        decoder: decoder class, 'linear' (the paper's) or 'mlp'.
        optimisation: settings of fits from a fresh initialisation.
        refit_optimisation: settings of warm-started re-fits.
        max_restarts: most restarts per fit of the adaptive restart.
        restart_threshold: its indicator threshold; None means 1/K.
        holdout_every: every this many exploration samples, one is held out of line 4 and
            measures the indicator instead (default 10: a tenth), so that the adaptive
            restart also rejects fits that memorise D; 0 fits on all of D.
        seed: seed or numpy Generator.
    """

    def __init__(self, n_actions: int, context_dim: int, feedback_dim: int,
                 schedule: Schedule | None = None, update_every: int = 100,
                 exploit: str = "greedy", policy: str = "linear", decoder: str = "linear",
                 optimisation: Optimisation | None = FIRST_FIT,
                 refit_optimisation: Optimisation | None = REFIT, max_restarts: int = 4,
                 restart_threshold: float | None = None, holdout_every: int = 10,
                 seed: SeedLike = None):
        super().__init__(n_actions, context_dim, feedback_dim, schedule, update_every,
                         exploit, holdout_every, seed)
        self.refit_optimisation = refit_optimisation
        self._batch = BatchIGL(policy, decoder, optimisation, max_restarts=max_restarts,
                               restart_threshold=restart_threshold)
        self.decoder_: Decoder | None = None

    def _refit(self, data: tuple[torch.Tensor, ...],
               holdout: tuple[torch.Tensor, ...] | None) -> tuple[float, dict]:
        # Line 4 on D_i, warm-started from (pi_{i-1}, psi_{i-1}) once they exist.
        starts = None if self.policy_ is None else [(self.policy_, self.decoder_)]
        [(indicator, self.policy_, self.decoder_, tried)] = self._batch.fit_with_restarts(
            one_trial(data), self.n_actions, [self.rng], starts, self.refit_optimisation,
            None if holdout is None else one_trial(holdout))
        return indicator, {"restarts": len(tried) - 1, "flipped": bool(self.decoder_.flipped)}

    def decode(self, feedback: np.ndarray) -> np.ndarray:
        """psi_i(y), the current decoded reward of each feedback vector."""
        self._fitted()
        with torch.no_grad():
            return self.decoder_(as_tensor(feedback)).numpy()
