"""How good a fitted policy is on a log or a labelled context set."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import torch

from iglearn.data.contexts import ContextSet
from iglearn.data.logs import (
    InteractionLog,
    importance_weight_sums,
    probability_warning,
    standard_error,
)
from iglearn.data.stream import Block, LogStream
from iglearn.errors import DriftWarning, warn_caller
from iglearn.learners.base import DriftCount, PolicyLearner
from iglearn.learners.objective import indicator
from iglearn.learners.trials import as_tensor

_CHUNK = 65536


Table = InteractionLog | LogStream | ContextSet
"""What a model is evaluated on: a log (in memory or streamed) or a context set."""


def _instance_of(learner: object, module: str, name: str) -> bool:
    """Whether ``learner`` is an instance of the class ``name`` of ``module``, without
    importing that module: no instance of a class exists before its module is loaded."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(learner, getattr(loaded, name))


def blocks(table: Table) -> Iterator[Block]:
    """The rows of ``table`` in order, a block of fields at a time: slices of a table in
    memory, or a stream's chunks."""
    if isinstance(table, LogStream):
        yield from table.chunks()
        return
    present = {name: getattr(table, name) for name in
               ("context", "action", "probability", "feedback", "reward", "label")
               if getattr(table, name, None) is not None}
    for start in range(0, len(table), _CHUNK):
        yield {name: value[start:start + _CHUNK] for name, value in present.items()}


def evaluate(learner: PolicyLearner, table: Table, *, by_position: bool = False
             ) -> dict[str, Any]:
    """Measures of the fitted softmax policy pi on ``table`` (in memory or streamed), as sums
    over its blocks (:func:`blocks`).

    - ``accuracy``: share of contexts whose greedy action is the label (when labels exist);
    - ``value_ips`` / ``greedy_value_ips``: importance-weighted estimates mean[pi(a|x) r / p]
      of the true value of pi and of its greedy policy (when the latent reward exists; for
      evaluation only, nothing is learnt from it);
    - ``decoded_value``: mean[pi(a|x) psi(y) / p], the value of pi under the decoded reward
      (a log, and a learner with decoders), where psi is the decoder of a ``BatchIGL`` or a
      ``VIIGL`` and, for an ``AIIGL``, the decoder psi_a of the action that produced the
      feedback, each reading the feedback standardised as at the fit (the learner's
      ``standardised_feedback``);
    - ``indicator``: the indicator the learner's algorithm defines: Eq. 9,
      decoded_value - mean[(1/K) psi(y) / p], for a ``BatchIGL`` or a ``VIIGL``; for an
      ``AIIGL``,
      sum_a Cov_a(pi(a|x), psi_a(y)), each action's rows weighted by 1/p
      (:mod:`iglearn.learners.ai_igl`); for an ``IGLP``, psi is its decoded three-state
      reward in [-1, 1] and there is no indicator.

    Rewards may lie anywhere in [-1, 1], so ``value_ips`` of a log of personalised feedback
    is the value of the three-state reward. Each mean over the log has its standard error
    (``value_ips_error``, ``greedy_value_ips_error``, ``decoded_value_error``); a log's
    ``weight_means`` are the means of 1{A = a} / p per action, about 1 each when the
    probabilities are the logged actions' (:func:`~iglearn.data.logs.probability_warning`).

    ``table`` must be of the model's K and widths, its features named as the model's, in its
    order (:meth:`~iglearn.learners.base.PolicyLearner.check_table`), unless ``by_position``:
    its columns were mapped onto the model's already (``iglearn evaluate``'s column options,
    checked against the model), so their names are not compared.
    """
    per_action = _instance_of(learner, "iglearn.learners.ai_igl", "AIIGL")
    three_state = _instance_of(learner, "iglearn.learners.iglp", "IGLP")
    decoder = getattr(learner, "decoder_", None)  # BatchIGL's and VIIGL's psi
    decodes = per_action or three_state or decoder is not None
    learner.check_table(table, "evaluate", isinstance(table, InteractionLog | LogStream)
                        and decodes, names=not by_position)
    n = len(table)
    k = table.n_actions
    is_log = isinstance(table, InteractionLog | LogStream)
    fields = table.fields if isinstance(table, LogStream) else (
        {"label"} if table.label is not None else set()) | (
        {"reward"} if is_log and getattr(table, "reward", None) is not None else set())
    has_label, has_reward = "label" in fields, "reward" in fields
    decoding = is_log and decodes
    fitted = cast(Any, learner)
    sums = {"correct": 0.0, "ips": 0.0, "greedy": 0.0, "decoded": 0.0, "indicator": 0.0,
            "ips2": 0.0, "greedy2": 0.0, "decoded2": 0.0}
    # per action a: sums over its rows of 1/p (the weights' check, and the count AI-IGL's
    # indicator normalises by) and of 1/p²
    weights = np.zeros((2, k))
    # per action a: sums over its rows of pi/p, psi/p and pi psi/p (AI-IGL's indicator)
    moments = np.zeros((3, k))
    drift = DriftCount(learner)
    with warnings.catch_warnings():  # told once, for the whole table, by drift.warn
        warnings.simplefilter("ignore", DriftWarning)
        for block in blocks(table):
            pi = learner.predict_proba(block["context"]).astype(np.float64)
            drift.add(block["context"], "context")
            greedy = pi.argmax(1)
            if has_label:
                sums["correct"] += float((greedy == block["label"]).sum())
            if not is_log:
                continue
            action, p = block["action"], np.asarray(block["probability"], np.float64)
            pi_logged = pi[np.arange(len(action)), action]
            weights += importance_weight_sums(action, p, k)
            if has_reward:
                weight = block["reward"] / p
                ips, greedy_ips = pi_logged * weight, (greedy == action) * weight
                sums["ips"] += float(ips.sum())
                sums["greedy"] += float(greedy_ips.sum())
                sums["ips2"] += float((ips ** 2).sum())
                sums["greedy2"] += float((greedy_ips ** 2).sum())
            if not decoding:
                continue
            drift.add(block["feedback"], "feedback")
            if three_state:
                psi = fitted.decode(block["context"], action, block["feedback"])
            elif per_action:
                psi = fitted.decode(block["feedback"], action).astype(np.float64)
                for m, value in enumerate((pi_logged, psi, pi_logged * psi)):
                    moments[m] += np.bincount(action, value / p, minlength=k)
            else:  # a BatchIGL's or a VIIGL's decoder, on the feedback as it reads it
                with torch.no_grad():
                    assert decoder is not None  # decoding without per-action decoders
                    psi = decoder(as_tensor(learner.standardised_feedback(block["feedback"]))
                                  ).double().numpy()
                sums["indicator"] += float(indicator(
                    torch.from_numpy(pi_logged), torch.from_numpy(psi), torch.from_numpy(p),
                    k)) * len(action)
            decoded = pi_logged * psi / p
            sums["decoded"] += float(decoded.sum())
            sums["decoded2"] += float((decoded ** 2).sum())
    drift.warn(table.source)
    out: dict[str, Any] = {"samples": n}
    if has_label:
        out["accuracy"] = sums["correct"] / n
    if has_reward:
        out["value_ips"] = sums["ips"] / n
        out["value_ips_error"] = standard_error(sums["ips"], sums["ips2"], n)
        out["greedy_value_ips"] = sums["greedy"] / n
        out["greedy_value_ips_error"] = standard_error(sums["greedy"], sums["greedy2"], n)
    if is_log and n:
        out["weight_means"] = (weights[0] / n).tolist()
        warning = probability_warning(weights, n, table.source)
        if warning is not None:
            warn_caller(warning)
    if decoding:
        out["decoded_value"] = sums["decoded"] / n
        out["decoded_value_error"] = standard_error(sums["decoded"], sums["decoded2"], n)
        if per_action:
            seen = weights[0] > 0
            mean = moments[:, seen] / weights[0, seen]
            out["indicator"] = float((mean[2] - mean[0] * mean[1]).sum())
        elif not three_state:
            out["indicator"] = sums["indicator"] / n
    return out
