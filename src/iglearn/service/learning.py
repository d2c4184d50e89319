"""Learning while serving: the background worker process that re-fits the model.

The worker watches the storage and re-fits when ``refit_every`` new joined interactions it
may learn from have arrived, when ``refit_seconds`` have passed with new ones, or when an
admin asks (``POST /v1/model/refit``). A re-fit reads the latest ``max_interactions``
learnable joined interactions as an :class:`~iglearn.data.logs.InteractionLog`, fits a fresh
learner of the configured algorithm on it (:func:`refit`), and stores the model folder's
archive as the next version, which the service then swaps in. An IGL re-fit takes the served
model as its reference (:meth:`~iglearn.learners.batch_igl.BatchIGL.fit`): it keeps the
served model's reading of the feedback unless the log clearly says otherwise, so that
re-fits on a small, nearly greedy log do not swap the meaning of the feedback back and
forth. The service's decisions never wait for it: it is another process with its own
database connection.

Several replicas on one database each run a worker, but only the holder of the storage's
re-fit lease (:meth:`~iglearn.service.storage.Storage.hold_refit_lease`) re-fits; the others
try to take the lease at every poll, so when the holder dies another takes over. The holder
records itself in the shared state ``refit_lease`` ({host, port, pid, since}).

While the database cannot be reached the worker keeps polling: the outage is one line of the
operator's log (:data:`~iglearn.service.operator_log.OUTAGE`), a re-fit it interrupts one
more (a ``refit`` line, outcome ``failed``), and the re-fit runs again once the database is
back (its lease, lost with its connection, is taken again by this replica or another).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import os
import signal
import socket
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from iglearn.data.contexts import row_groups
from iglearn.data.limits import MIN_PER_ACTION
from iglearn.data.logs import InteractionLog
from iglearn.errors import IGLearnError
from iglearn.heap import pad_heap
from iglearn.learners.settings import restart_passes
from iglearn.processes import end_with_parent
from iglearn.service.config import ServiceConfig, make_learner
from iglearn.service.operator_log import (
    log_error,
    log_event,
    refit_message,
    route_database_log,
)
from iglearn.service.storage import ModelRecord, Storage, StorageUnavailable, open_storage
from iglearn.threads import process_threads


class ServiceGone(Exception):
    """The service a worker re-fits for has ended: the worker stores nothing more."""


def learnable_log(storage: Storage, config: ServiceConfig) -> InteractionLog | None:
    """The latest joined interactions re-fits may learn from, as a log (None if none)."""
    data = storage.joined(learnable_only=True, latest=config.learning.max_interactions)
    if not len(data):
        return None
    return InteractionLog(data.context, data.action, data.probability, data.feedback,
                          config.model.n_actions, definitely_bad=data.definitely_bad,
                          source="the service's joined interactions")


STORED_PRECISION_FIX = ("subtract a fixed offset from it before sending it (a time stamp: "
                        "the time since a start of your choosing), and fit a new model")
"""What a re-fit's warning of a stored column that lost its differences tells the client."""


def stored_precision_warnings(log: InteractionLog, config: ServiceConfig) -> list[str]:
    """The warnings of stored context or feedback columns that vary by less than 2^-14 of
    their size (:func:`~iglearn.data.logs.lost_digits_warning`): the service stores vectors
    as float32, about 7 significant digits, as every log is held, so a raw time stamp in
    milliseconds or a value around 1e8 varying in its last digits keeps few of its
    differences, and values that differ by less than float32's resolution are stored as
    one (and a re-sent event id compares its context at that precision)."""
    from iglearn.data.logs import Places, lost_digits_warning

    named = {"context": config.model.context_names, "feedback": config.model.feedback_names}
    places = Places(columns={kind: list(names) for kind, names in named.items() if names})
    source = "the service's stored interactions"
    found = [lost_digits_warning(kind, getattr(log, kind), source, places, STORED_PRECISION_FIX)
             for kind in ("context", "feedback")]
    return [warning for warning in found if warning is not None]


def fit_summary(learner: Any, log: InteractionLog, config: ServiceConfig) -> dict[str, Any]:
    """What a re-fit reports: the learner's indicator (None for a learner that reports
    none), the share of its decoded reward the logged action explains (2021 IGL and
    VI-IGL), Lemma 5's bound (IGL only) and whether the data-driven schedule's test passed;
    neither the bound nor the test for a decoder that follows the action
    (:func:`~iglearn.theory.action_led`): both assume feedback that depends on
    the action only through the reward, and a decoder that reads the action from the
    feedback passes them with a policy at chance."""
    from iglearn.theory import DEFAULT_IOTA, lemma5_summary

    report = getattr(learner, "report_", None)
    n, k = len(log), log.n_actions
    value = getattr(report, "indicator", None)
    indicator = float(value) if value is not None and math.isfinite(value) else None
    error = getattr(report, "indicator_error", None)
    summary: dict[str, Any] = {"source": "refit", "indicator": indicator,
                               "indicator_error": None if error is None else float(error),
                               "seconds": float(getattr(report, "seconds", 0.0)),
                               "warnings": [str(w) for w in getattr(report, "warnings", [])]}
    explained = getattr(report, "action_explained", None)
    if explained is not None:
        summary["action_explained"] = float(explained)
    if indicator is None:
        summary["certified"] = False
        return summary
    if config.model.algorithm == "igl":
        max_weight = 1.0 / float(np.min(log.probability))
        summary["lemma5"] = lemma5_summary(indicator, n, k, DEFAULT_IOTA, 1.0 / k, max_weight,
                                           explained)
    schedule = config.exploration.make_schedule()
    summary["certified"] = bool(schedule.certifies(indicator, n, k, explained))
    return summary


def held_back(learner: Any, config: ServiceConfig, log: InteractionLog | None = None,
              served: Any = None) -> str | None:
    """Why a re-fit is stored but not served, or None to serve it. Given the ``served``
    model and the ``log``, the two are first compared by how often the log contradicts their
    readings of the feedback (:func:`contradicted_reading`): the one contradicted clearly less
    (:func:`clearly_fewer`) wins.
    Otherwise the re-fit is held back when its indicator is below the served model's on the
    same ``log`` by more than the restart's confidence times its standard error (a fit
    clearly worse than the one it would replace: the re-fit's indicator is measured on the
    log it was fitted on, so it is no less favourable), or when it does not pass the
    learner's adaptive restart test (:func:`~iglearn.learners.settings.restart_passes`, the
    test of the learner's ``IdentifiabilityWarning``) while the served model's indicator on
    the same ``log`` is at least the re-fit's and above the threshold (a served model which
    the newer interactions no longer bear out is no bar). Never with ``[learning]
    serve_unidentified``, and never for a learner that reports no indicator and
    threshold."""
    report = getattr(learner, "report_", None)
    indicator = getattr(report, "indicator", None)
    threshold = getattr(report, "threshold", None)
    if config.learning.serve_unidentified or indicator is None or threshold is None:
        return None
    if served is not None and log is not None:
        verdict = contradicted_reading(learner, served, log)
        if verdict is not None:  # the log refutes one of the two readings more often
            return verdict or None
    confidence = getattr(report, "restart_confidence", 0.0)
    error = getattr(report, "indicator_error", 0.0)
    margin = confidence * error
    current = None if served is None or log is None else float(served.indicator(log))
    if math.isfinite(indicator) and restart_passes(indicator, error, confidence, threshold):
        if current is not None and math.isfinite(current) and indicator < current - margin:
            return (f"worse than the served model: indicator {indicator:.4f} is below the "
                    f"served model's {current:.4f} on the same interactions by more than "
                    f"{margin:.4f} (the restart's confidence)")
        return None
    reason = (f"not identified: indicator {indicator:.4f} is not above the restart threshold "
              f"{threshold:.4f}" + (f" by {margin:.4f} (the restart's confidence)"
                                    if margin else ""))
    if current is None:
        return reason
    if math.isfinite(indicator) and not (indicator <= current
                                         and restart_passes(current, 0.0, 0.0, threshold)):
        return None  # above the served model's, or the log no longer bears that one out
    return f"{reason} nor the served model's {current:.4f} on the same interactions"


def contradictions(reward: np.ndarray, log: InteractionLog) -> int:
    """How many times ``log`` contradicts a reading of its feedback (``reward``: whether each
    interaction's feedback decodes as reward) under IGL's classification assumption, that
    each context has one rewarded action, so that the reward is a function of the context
    and the action. Interactions with the same context vector form a stratum, and
    interactions with the same context and action a cell. Two kinds of contradiction are
    counted: an action of a stratum counts as rewarded when most of its cell decodes as
    reward, and each stratum with m > 1 rewarded actions counts m - 1; and each cell's
    interactions decoded against the cell's majority count one each (one context and action
    read both as rewarded and as not: a decoder that reads something other than the reward
    in the feedback, such as how a gesture was drawn, splits cells). A reading of the
    feedback's opposite is contradicted as soon as one context has been seen with two of its
    unrewarded actions; a cell split one way is split the other way under the opposite
    reading. Where no context repeats, nothing can contradict a reading (0)."""
    return int(contradiction_counts(np.asarray(reward)[None], log)[0])


def contradiction_counts(readings: np.ndarray, log: InteractionLog) -> np.ndarray:
    """:func:`contradictions` of each row of ``readings`` (R, n), grouping ``log``'s contexts
    into strata once."""
    k = log.n_actions
    cells = row_groups(np.asarray(log.context)) * k + np.asarray(log.action)
    size = (int(cells.max()) // k + 1) * k
    counts = np.bincount(cells, minlength=size)
    rewarded = np.stack([np.bincount(cells, weights=reward, minlength=size)
                         for reward in np.asarray(readings, dtype=np.float64)])
    per_stratum = (2 * rewarded > counts).reshape(len(rewarded), -1, k).sum(2)
    split = np.minimum(rewarded, counts - rewarded).sum(1).astype(np.int64)
    return np.maximum(per_stratum - 1, 0).sum(1) + split


CONTRADICTION_CONFIDENCE = 1.5
"""How many standard deviations of a sign test the gap between two readings' contradiction
counts must exceed before it decides between them (:func:`clearly_fewer`)."""


def clearly_fewer(fewer: int, more: int) -> bool:
    """Whether a reading contradicted ``fewer`` times is clearly better borne out than one
    contradicted ``more`` times: the gap exceeds :data:`CONTRADICTION_CONFIDENCE` times the
    square root of their sum (a sign test: were both readings as good, each contradiction
    would fall on either side alike). A gap of one or two contradictions (a noisy user's
    repeated context seen with two rewarded-looking actions) decides nothing; the
    indicators do."""
    return more - fewer > CONTRADICTION_CONFIDENCE * math.sqrt(fewer + more)


def less_contradicted_opposite(learner: Any, log: InteractionLog) -> Any:
    """A copy of the fitted IGL ``learner`` with its decoder flipped when ``log`` contradicts
    the opposite of its reading of the feedback clearly less often than its own
    (:func:`contradictions`; e.g. a context seen with two actions decoded as rewarded), else
    None. :func:`refit` then fits again with that copy as the reference and an unbounded
    ``reference_confidence``, so that Appendix B's corrector keeps the opposite reading
    throughout the fit (its statistic, re-weighted to uniform play, rests on the few
    explored interactions of a nearly greedy log; a repeated context refutes a reading
    outright)."""
    import torch

    from iglearn.learners.batch_igl import BatchIGL

    if not isinstance(learner, BatchIGL):
        return None
    reward = learner.decode(log.feedback) > 0.5
    own, opposite_reading = contradiction_counts(np.stack([reward, ~reward]), log)
    if not clearly_fewer(int(opposite_reading), int(own)):
        return None
    opposite = copy.deepcopy(learner)
    with torch.no_grad():
        opposite.decoder_.flipped.logical_not_()
    return opposite


def contradicted_reading(learner: Any, served: Any, log: InteractionLog) -> str | None:
    """Whether the re-fit ``learner`` or the ``served`` model reads ``log``'s feedback the
    way the log contradicts less (:func:`contradictions`): '' to serve the re-fit, why it is
    held back, or None when neither is contradicted clearly less (:func:`clearly_fewer`; or a
    model has no decoder) and the indicators decide (:func:`held_back`). On a log gathered by
    a served model that reads the feedback's opposite, its own reading scores its own choices
    as rewarded and its indicator stays high; repeated contexts refute it outright."""
    if not all(hasattr(m, "decode") for m in (learner, served)):
        return None
    mine, theirs = contradiction_counts(
        np.stack([model.decode(log.feedback) > 0.5 for model in (learner, served)]), log)
    if clearly_fewer(int(mine), int(theirs)):
        return ""
    if not clearly_fewer(int(theirs), int(mine)):
        return None
    return (f"the log contradicts its reading of the feedback more often than the served "
            f"model's ({mine} against {theirs} times: a context seen with more than one "
            f"rewarded action, or one action of a context read both ways)")


def served_reference(storage: Storage, config: ServiceConfig) -> tuple[int, Any] | None:
    """The served version and its model, as the reference of an IGL re-fit; None when no
    model is served, the algorithm takes no reference, or the served version cannot be
    read."""
    from iglearn.learners.batch_igl import BatchIGL
    from iglearn.models.archive import load_archive

    version = storage.served_version()
    if version == 0:
        return None
    try:
        model = load_archive(storage.model_archive(version), config.model.algorithm,
                             f"model version {version}")
    except IGLearnError:
        return None
    return (version, model) if isinstance(model, BatchIGL) else None


def refit(storage: Storage, config: ServiceConfig, reason: str,
          minimum: int | None = None,
          serving: Callable[[], bool] = lambda: True) -> ModelRecord:
    """Fit a new model on the learnable joined interactions and store it as the next
    version, served unless :func:`held_back` says why not (its summary's ``held_back``).
    ``minimum``: fewest interactions to fit on (default ``min_interactions``).
    ``serving``: asked right before the model is stored; when it says the service has ended
    (its worker outlived it for a moment), nothing is stored and :class:`ServiceGone` is
    raised, so that a replica killed mid-fit never answers a re-fit asked of another."""
    from iglearn.learners.registry import save_model
    from iglearn.models.archive import pack_model

    minimum = config.learning.min_interactions if minimum is None else minimum
    learnable = storage.counts().learnable
    log = learnable_log(storage, config)
    if log is None or len(log) < minimum:
        raise IGLearnError(f"{0 if log is None else len(log)} joined interactions to learn "
                           f"from, fewer than {minimum}; send more feedback first")
    version = max([m.version for m in storage.models()] + [storage.served_version()]) + 1
    seed = int(np.random.SeedSequence([config.model.seed, version]).generate_state(1)[0])
    learner = make_learner(config, config.path, seed=seed)
    reference = served_reference(storage, config)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if reference is None:
            learner.fit(log)
        else:
            learner.fit(log, reference=reference[1])
        opposite = less_contradicted_opposite(learner, log)
        if opposite is not None:  # fit again, keeping the opposite reading throughout
            confidence = learner.reference_confidence
            learner = dataclasses.replace(learner, reference_confidence=math.inf)
            learner.fit(log, reference=opposite)
            learner.reference_confidence = confidence  # the model keeps its own setting
    seconds = time.perf_counter() - start
    withheld = held_back(learner, config, log, None if reference is None else reference[1])
    summary = fit_summary(learner, log, config)
    summary["stored_precision"] = stored_precision_warnings(log, config)
    summary["warnings"] = summary["stored_precision"] + summary["warnings"]
    summary |= {
        "reason": reason, "learnable": learnable,
        "reference_version": None if reference is None else reference[0],
        "held_back": withheld}
    with tempfile.TemporaryDirectory(prefix="iglearn-refit-") as tmp:
        folder = os.path.join(tmp, "model")
        save_model(learner, folder, extra={"source": "iglearn serve", "version": version})
        archive = pack_model(folder)
    if not serving():
        raise ServiceGone
    record = storage.add_model(config.model.algorithm, len(log), seconds, summary, archive,
                               serve=withheld is None)
    storage.prune_models(config.learning.keep_versions)
    return record


def due(storage: Storage, config: ServiceConfig, now: float) -> str | None:
    """Why a re-fit is due now ('requested'; 'first', once ``min_interactions`` are learnable
    and no re-fit has run; 'count' or 'time'), or None."""
    last = storage.state("last_refit") or {}
    requested = storage.state("refit_requested_at")
    if requested is not None and requested > last.get("at", 0.0):
        return "requested"
    learnable = storage.counts().learnable
    if learnable < config.learning.min_interactions:
        return None
    if "at" not in last:
        return "first"
    since = learnable - int(last.get("learnable", 0))
    if since >= config.learning.refit_every:
        return "count"
    if since > 0 and now - last.get("at", 0.0) >= config.learning.refit_seconds:
        return "time"
    return None


def run_once(storage: Storage, config: ServiceConfig,
             serving: Callable[[], bool] = lambda: True) -> dict[str, Any] | None:
    """One look for work: re-fit if due, and record the outcome in the shared state
    ``last_refit`` ({at, reason, learnable: the learnable interactions counted when the
    fit read its log, by: the replica's host:port, version or
    error, held_back: why the version is stored but not served, or None});
    ``refit_running`` holds {at, reason} while it runs. ``serving``: see :func:`refit`.
    The operator's log gets the re-fit's line, then one line for each of its warnings of
    stored columns that float32 rounds away (:func:`stored_precision_warnings`) that the
    previous re-fit did not give (``last_refit``'s ``stored_precision``). A re-fit the
    database's outage interrupts gets its line (outcome ``failed``) and raises
    :class:`~iglearn.service.storage.StorageUnavailable`: nothing is recorded, so it is due
    again once the database is back."""
    reason = due(storage, config, time.time())
    if reason is None:
        return None
    at = time.time()
    learnable = storage.counts().learnable
    outcome: dict[str, Any] = {"at": at, "reason": reason, "learnable": learnable,
                               "by": f"{socket.gethostname()}:{config.server.port}"}
    storage.set_state("refit_running", {"at": at, "reason": reason})
    record = None
    previous = (storage.state("last_refit") or {}).get("stored_precision") or []
    try:
        # an admin's request waits for no min_interactions, only for what any fit needs
        minimum = MIN_PER_ACTION * config.model.n_actions if reason == "requested" else None
        record = refit(storage, config, reason, minimum, serving)
        # the count the fit read its log at, not the one above: the first re-fit spends
        # seconds starting, and what arrived meanwhile is in its log (a 'count' re-fit
        # counts from there)
        outcome |= {"learnable": record.summary.get("learnable", learnable),
                    "version": record.version, "seconds": record.fit_seconds, "error": None,
                    "held_back": record.held_back,
                    "stored_precision": list(record.summary.get("stored_precision", []))}
    except StorageUnavailable as e:
        error = f"{e.problem}; it runs again once the database is back"
        seconds = time.time() - at
        log_event(config.server.log_format, "refit",
                  refit_message(reason, None, 0, None, seconds, error),
                  reason=reason, version=None, interactions=0, indicator=None,
                  seconds=seconds, outcome="failed", error=error, held_back=None,
                  served_version=None)
        raise
    except IGLearnError as e:
        outcome |= {"version": None, "error": str(e)}
    finally:
        storage.set_state("refit_running", None)
    storage.set_state("last_refit", outcome)
    seconds = record.fit_seconds if record is not None else time.time() - at
    indicator = None if record is None else record.summary.get("indicator")
    interactions = 0 if record is None else record.interactions
    withheld = outcome.get("held_back")
    served = storage.served_version()
    log_event(config.server.log_format, "refit",
              refit_message(reason, outcome["version"], interactions, indicator, seconds,
                            outcome["error"], withheld, served),
              reason=reason, version=outcome["version"], interactions=interactions,
              indicator=indicator, seconds=seconds,
              outcome="failed" if record is None else "held_back" if withheld else "served",
              error=outcome["error"], held_back=withheld, served_version=served)
    for warning in outcome.get("stored_precision", []):
        if warning not in previous:
            log_event(config.server.log_format, "refit_warning",
                      f"re-fit version {outcome['version']} warns: {warning}",
                      version=outcome["version"], warning=warning)
    return outcome


OPEN_RETRY_SECONDS = 1.0
"""How often a learning worker started while the database cannot be reached tries to open
it (:func:`open_when_reachable`)."""


def open_when_reachable(config: ServiceConfig, serving: Callable[[], bool]) -> Storage:
    """The worker's storage, opened once the database can be reached: a worker started (or
    restarted) during an outage reports it once (:data:`OUTAGE
    <iglearn.service.operator_log.OUTAGE>`) and tries again every
    :data:`OPEN_RETRY_SECONDS` while its service runs."""
    from iglearn.service.operator_log import OUTAGE

    while True:
        try:
            storage = open_storage(config.db_path, config.server.synchronous, pool_size=2)
        except IGLearnError as e:
            if not serving():
                os._exit(0)
            OUTAGE.down(str(e))
            time.sleep(OPEN_RETRY_SECONDS)
            continue
        OUTAGE.up()
        return storage


def worker_main(config: ServiceConfig, parent: int) -> None:
    """The worker process: while it holds the re-fit lease, look for work every
    ``poll_seconds`` (else try to take the lease as often) until the service (process
    ``parent``) is gone: it ends with its service, killed or not. A failure it cannot go on
    after is one line of the operator's log (its traceback a field), and the service starts
    another worker."""
    route_database_log(config.server.log_format, "worker")
    try:
        work(config, parent)
    except Exception as e:
        log_error(config.server.log_format, "the learning worker stopped", e)
        os._exit(1)


def work(config: ServiceConfig, parent: int) -> None:
    """:func:`worker_main`'s loop."""
    end_with_parent(parent, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service ends the worker itself
    os.nice(config.learning.worker_nice)
    process_threads(config.learning.worker_threads)
    pad_heap()  # its first re-fit would give the heap back and take it again at every step

    def serving() -> bool:
        return os.getppid() == parent  # a child is re-parented the moment its parent dies

    storage = open_when_reachable(config, serving)
    holding = False
    while True:
        try:
            if not serving():
                os._exit(0)
            if storage.hold_refit_lease():
                if not holding:
                    storage.set_state("refit_lease", {
                        "host": socket.gethostname(), "port": config.server.port,
                        "pid": parent, "since": time.time()})
                    holding = True
                run_once(storage, config, serving)
            else:
                holding = False
        except ServiceGone:
            os._exit(0)
        except StorageUnavailable:  # its outage has its line; the next poll tries again
            pass
        except Exception as e:  # an unexpected failure is reported and the worker goes on
            log_error(config.server.log_format, "re-fit failed", e)
            with contextlib.suppress(StorageUnavailable):
                storage.set_state("last_refit", {"at": time.time(), "reason": "error",
                                                 "version": None,
                                                 "error": "internal error; see the service "
                                                          "log"})
        time.sleep(config.learning.poll_seconds)
