"""The decision service's HTTP API (Starlette on uvicorn).

Every request is checked in this order: its API key (401 without a valid one, 403 for the
wrong role), its body size (413), then its fields (422 naming the field and the problem);
nothing is stored for a rejected request (but a batch with an event id stored before with
another context, 409 once the batch's other decisions are stored: :func:`check_retries`).
While the database cannot be reached, a request that needs it is answered 503 with
``Retry-After`` within seconds (:class:`~iglearn.service.storage.StorageUnavailable`),
``/readyz`` answers 503 and ``/healthz`` says ``degraded``.
Decisions and feedback are committed to the storage
before their answer. The served model is swapped atomically (one reference replaced) when
the storage serves a new version, which the learning worker stores after each re-fit.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import json
import math
import re
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

import iglearn
from iglearn.data import limits, safejson
from iglearn.data.scaling import beyond_limits, drift_message
from iglearn.errors import SHOWN_CHARACTERS, IGLearnError, option_list, shown
from iglearn.service.config import SHAPE_RANGES, ServiceConfig, is_loopback
from iglearn.service.exploration import Explorer
from iglearn.service.ids import new_event_id
from iglearn.service.keys import KeyRing, sync_keys, watch_keys
from iglearn.service.metrics import Metrics
from iglearn.service.operator_log import (
    import_message,
    log_error,
    log_event,
    route_server_log,
    stop_message,
)
from iglearn.service.storage import (
    Decision,
    Feedback,
    FeedbackOutcome,
    Interactions,
    ModelRecord,
    Storage,
    StorageUnavailable,
    is_new_database,
    open_storage,
)
from iglearn.service.supervisor import CHECK_SECONDS, WorkerSupervisor
from iglearn.threads import process_threads

if TYPE_CHECKING:
    from iglearn.data.formats.base import FeatureSchema

LOG_FORMATS = {"parquet": "application/vnd.apache.parquet", "dsjson": "application/x-ndjson",
               "npz": "application/octet-stream"}
IMPORT_SIZE_FACTOR = 64
"""PUT /v1/model accepts a body this many times ``max_body_bytes`` (at most
:data:`iglearn.models.archive.MAX_ARCHIVE_BYTES`)."""
KEY_RELOAD_SECONDS = 1.0
"""An unknown key makes the service re-read the stored keys at most this often (keys added
with ``iglearn serve keys add`` while it runs)."""
RETENTION_SECONDS = 3600.0
"""How often the retention setting is applied."""
CHECKPOINT_SECONDS = 1.0
"""How often a thread of the service checkpoints the database's WAL (off the requests' path)."""
UNREACHABLE_RETRY_SECONDS = 2
"""The ``Retry-After`` of a 503 while the database cannot be reached: about how often the
connection pool tries to connect again (:data:`iglearn.service.postgres.RECONNECT_SECONDS`)."""
PROBE_REUSE_SECONDS = 0.5
"""``/readyz`` probes the database at most this often (:meth:`Service.database_problem`):
the answer of a probe this recent is given again, so that a busy prober (which needs no
key) costs the database nothing more."""
_NUMBER_TYPES = frozenset({int, float})
_EVENT_ID = re.compile(r"[A-Za-z0-9._:\-]+")


class Rejected(Exception):
    """A request answered with an error status: ``field`` names what was wrong (or None);
    ``close``: close the connection after the answer."""

    def __init__(self, status: int, message: str, field: str | None = None,
                 retry_after: int | None = None, close: bool = False):
        super().__init__(message)
        self.status, self.message, self.field, self.close = status, message, field, close
        self.retry_after = retry_after
        """Seconds after which to ask again (a 503's Retry-After header), if known."""


PolicyFunction = Callable[[np.ndarray], np.ndarray]
"""pi(. | x) of the served model: contexts (n, d_x) to distributions (n, K)."""


def policy_function(learner: Any) -> PolicyFunction:
    """pi(. | x) of a loaded learner, as the service evaluates it for each group of decisions.

    A learner whose policy is a linear softmax policy (the paper's policy class,
    :class:`~iglearn.models.policies.Policy` on one ``nn.Linear``) and which computes pi with
    :meth:`PolicyLearner.predict_proba <iglearn.learners.base.PolicyLearner.predict_proba>`
    is evaluated with numpy on a copy of its weights: the same float32 product and softmax,
    equal to the torch evaluation up to rounding, without torch's per-call overhead, which
    for a group of a few contexts costs several times the product itself (the contexts
    standardised first, as ``predict_proba`` does). Any other learner
    is evaluated by its own ``predict_proba``."""
    from torch import nn

    from iglearn.learners.base import PolicyLearner
    from iglearn.models.kernels import Linear
    from iglearn.models.policies import Policy

    policy = getattr(learner, "policy_", None)
    if not (type(learner).predict_proba is PolicyLearner.predict_proba
            and isinstance(policy, Policy) and type(policy).probabilities is Policy.probabilities
            and isinstance(policy.net, nn.Linear) and type(policy.net) in (nn.Linear, Linear)):
        return learner.predict_proba
    weight = policy.net.weight.detach().cpu().numpy().astype(np.float32).T.copy()
    bias = (np.zeros(weight.shape[1], np.float32) if policy.net.bias is None
            else policy.net.bias.detach().cpu().numpy().astype(np.float32))
    temperature = np.float32(policy.temperature)
    standardiser = getattr(learner, "standardiser_", None)

    def probabilities(contexts: np.ndarray) -> np.ndarray:
        """softmax((x W^T + b) / temperature), float32 (n, K), x standardised with the
        model's statistics (:mod:`iglearn.data.scaling`) as ``predict_proba`` does."""
        contexts = (np.asarray(contexts, np.float32) if standardiser is None
                    else standardiser.apply(contexts))
        scores = (contexts @ weight + bias) / temperature
        scores = np.exp(scores - scores.max(1, keepdims=True))
        return scores / scores.sum(1, keepdims=True)

    return probabilities


DRIFT_DECISIONS = 200
"""How many of a served version's first decisions :class:`DriftTally` judges."""


class DriftTally:
    """Whether the contexts a served version decides for lie in the range of its training
    log: over its first :data:`DRIFT_DECISIONS` decisions in this process, how many values
    of each context column lie beyond the limits the model reads
    (:func:`~iglearn.data.scaling.beyond_limits`); then the operator's log says once (event
    ``drift``) when a column lies mostly beyond them
    (:func:`~iglearn.data.scaling.drift_message`): contexts sent in another unit or from
    another origin than the model's log (degrees Fahrenheit to a model fitted on Celsius)
    are read as the range's ends, and the model decides at chance without an error."""

    def __init__(self, learner: Any, names: Sequence[str] | None):
        self.standardiser = getattr(learner, "standardiser_", None)
        schema = getattr(learner, "schema_", None)
        self.names = tuple(names) if names else (None if schema is None
                                                 else tuple(schema.context) or None)
        self.rows = 0
        self.beyond: np.ndarray | None = None
        self.done = self.standardiser is None
        self._lock = threading.Lock()

    def add(self, contexts: np.ndarray, version: int, log_format: str) -> None:
        """Count ``contexts`` (n, d_x), decided by ``version``; once enough are counted,
        log the drift, if any, and stop counting."""
        standardiser = self.standardiser
        if self.done or standardiser is None:
            return
        beyond = beyond_limits(standardiser, contexts, "context")
        with self._lock:
            if self.done:
                return
            if beyond is None:
                self.done = True
                return
            self.beyond = beyond if self.beyond is None else self.beyond + beyond
            self.rows += len(contexts)
            if self.rows < DRIFT_DECISIONS:
                return
            self.done = True
            message = drift_message(standardiser, self.beyond, self.rows, "context",
                                    f"the first {self.rows} contexts model version {version} "
                                    f"decided for", self.names)
        if message is not None:
            log_event(log_format, "drift", message, version=version, decisions=self.rows)


@dataclass(frozen=True)
class Served:
    """The model being served: one reference the service replaces atomically."""

    version: int
    learner: Any
    record: ModelRecord
    policy: PolicyFunction
    """pi(. | x) of ``learner`` (:func:`policy_function`)."""
    drift: DriftTally
    """Whether its first decisions' contexts lie in its training log's range."""

    @property
    def certified(self) -> bool:
        """Whether its fit passed the data-driven schedule's test."""
        return bool(self.record.summary.get("certified", False))


def version_lag(served: Served | None, models: Sequence[ModelRecord]
                ) -> tuple[int, int, float]:
    """The served version, the newest of the stored ``models`` to serve and the seconds since
    the newest was stored while another one is served (0 when the newest is served; a
    rollback serves an older one on purpose). A re-fit held back (its summary's
    ``held_back``) is not one to serve, unless it is served."""
    version = 0 if served is None else served.version
    models = [m for m in models if not m.held_back or m.version == version]
    newest = models[-1].version if models else 0
    if newest == version or not models:
        return version, newest, 0.0
    return version, newest, max(0.0, time.time() - models[-1].created_at)


_STRICT_JSON = json.JSONEncoder(allow_nan=False)
"""json.dumps(value, allow_nan=False) without building an encoder for each answer."""


def json_response(value: object, status: int = 200, headers: dict | None = None) -> Response:
    """Strict JSON (no NaN or infinity)."""
    return Response(_STRICT_JSON.encode(value), status, headers, media_type="application/json")


def check_no_auth(config: ServiceConfig, insecure_no_auth: bool) -> None:
    """Refuse ``--insecure-no-auth`` off a loopback address."""
    if insecure_no_auth and not is_loopback(config.server.host):
        raise IGLearnError(f"--insecure-no-auth is only allowed on a loopback address, not "
                           f"{config.server.host}; create a key with 'iglearn serve keys "
                           f"add --config FILE --role admin'")


def no_key_yet(config: ServiceConfig) -> IGLearnError:
    """The refusal of a start without ``--insecure-no-auth`` on a database without keys."""
    return IGLearnError(f"{config.db_shown}: no API key yet; create one with 'iglearn serve "
                        f"keys add --config {config.path} --role admin' (or serve on "
                        f"loopback with --insecure-no-auth)")


SHAPE = tuple(SHAPE_RANGES)
"""The [model] settings every stored interaction and model version must share."""


def shape_mismatch(meta: dict[str, Any], config: ServiceConfig) -> tuple[str, Any, Any] | None:
    """The first of :data:`SHAPE` (and the algorithm) on which a model's ``model.json``
    (``meta``) differs from the configuration's [model]: (key, the model's, the
    configuration's); None if it fits."""
    model = config.model
    wanted = {"algorithm": model.algorithm, **{key: getattr(model, key) for key in SHAPE}}
    for key, value in wanted.items():
        have = meta.get(key, "igl" if key == "algorithm" else None)
        if have != value:
            return key, have, value
    return None


def check_stored_shape(storage: Storage, config: ServiceConfig) -> bool:
    """Refuse to serve a database whose interactions and models were stored for another K or
    other widths than the configuration's [model] (every decision would fail, or the log
    would mix widths and no re-fit could read it), naming the setting and both values;
    whether the database records its shape (:meth:`Service.__init__` records it in one that
    does not, once the start is not refused). Likewise the actions' names: a database
    whose interactions were decided under names is refused with one of them at another index
    (every stored decision and model would read as another action); new names for the same
    indices are recorded."""
    stored = storage.state("shape")
    if not isinstance(stored, dict):
        return False
    for key in SHAPE:
        value = getattr(config.model, key)
        if key in stored and stored[key] != value:
            raise IGLearnError(f"[model] {key} is {value} but the database {config.db_shown} "
                               f"holds interactions and models of {key} = {stored[key]}; "
                               f"configure {key} = {stored[key]}, or start with a new "
                               f"database")
    names, have = list(config.model.actions or ()), stored.get("actions")
    moved = [] if not names or have is None else [
        name for i, name in enumerate(names) if name in have and have.index(name) != i]
    if moved:  # new names for the same indices are fine; a name moved to another index is not
        raise IGLearnError(f"[model] actions are {shown(names)} but the database "
                           f"{config.db_shown} holds interactions and models of the actions "
                           f"{shown(have)} (in index order: each name would be another "
                           f"action's); configure actions = {json.dumps(have)}, or start "
                           f"with a new database")
    return all(key in stored for key in RECORDED) and (not names or names == have)


RECORDED = (*SHAPE, "actions")
"""What a database records of the [model] it was served with: its shape, and the actions'
names (None: indices), which a later start must keep."""


def recorded_shape(config: ServiceConfig, storage: Storage) -> dict[str, Any]:
    """The record of :data:`RECORDED` to keep: the configuration's, the names it does not
    give kept from the database's record."""
    stored = storage.state("shape")
    record = {key: getattr(config.model, key) for key in SHAPE}
    names = config.model.actions
    kept = stored.get("actions") if isinstance(stored, dict) else None
    record["actions"] = list(names) if names is not None else kept
    return record


class Service:
    """The state of one service process: configuration, storage, keys, the served model,
    the explorer and the metrics."""

    def __init__(self, config: ServiceConfig, insecure_no_auth: bool = False):
        check_no_auth(config, insecure_no_auth)
        self.config = config
        self.insecure = insecure_no_auth
        # one decision is a small product: several threads only wait on each other, and
        # on a busy machine (the learning worker fitting) each call would take milliseconds
        process_threads(config.server.torch_threads)
        if not insecure_no_auth and is_new_database(config.db_path):
            raise no_key_yet(config)  # before the schema is created: refused, nothing left
        self.storage: Storage = open_storage(config.db_path, config.server.synchronous,
                                             config.server.pool_size,
                                             checkpoint_seconds=CHECKPOINT_SECONDS)
        try:
            self.keyring = KeyRing(self.storage.keys())
            if not self.keyring and not insecure_no_auth:
                raise no_key_yet(config)
            self._keys_read = time.monotonic()
            self.keys_used: dict[str, float] = {}
            """When each key (by hash) was last used since the keys were last synced."""
            self.metrics = Metrics()
            self.served: Served | None = None
            self._swap = threading.Lock()
            self._pickup_error: tuple[int, str] | None = None
            self._attempt = 0
            recorded = check_stored_shape(self.storage, config)
            self.started = False
            """Whether the service has loaded what the database serves at its start (that
            load is no swap)."""
            self.load_served()
            self.started = True
            if not recorded:
                self.storage.set_state("shape", recorded_shape(config, self.storage))
            explored = int(self.storage.state("explored_rounds") or 0)
            self.explorer = Explorer(config.exploration, config.model.n_actions, explored,
                                     config.exploration.make_rng(explored))
        except BaseException:  # a refused start keeps no connection (nor lock) open
            self.storage.close()
            raise
        self.worker: WorkerSupervisor | None = None
        """The learning worker's supervisor, while the application runs one."""
        self._probe_lock = threading.Lock()
        self._probed: tuple[float, str | None] = (-math.inf, None)

    def database_problem(self) -> str | None:
        """Why the database cannot be reached now (:meth:`Storage.probe
        <iglearn.service.storage.Storage.probe>`, at most every :data:`PROBE_REUSE_SECONDS`;
        it may wait a second: call it off the event loop), or None."""
        with self._probe_lock:
            at, problem = self._probed
            if time.monotonic() - at >= PROBE_REUSE_SECONDS:
                problem = self.storage.probe()
                self._probed = (time.monotonic(), problem)
            return problem

    # -- model versions -------------------------------------------------------------------
    def load_served(self, storage: Storage | None = None) -> bool:
        """Swap in the storage's served version if it is not the one served (a version is
        told by its number and the time it was stored, so that a version number used again
        after the storage was cleared is loaded too); whether it changed. ``storage``: read
        through this connection instead of the service's (the pickup thread has its own).
        Loads run one at a time, so that a slow load never replaces a newer swap."""
        storage = self.storage if storage is None else storage
        with self._swap:
            version = self._attempt = storage.served_version()
            current = self.served
            if version == 0:
                return False
            record = next((m for m in storage.models() if m.version == version), None)
            if record is None:
                raise IGLearnError(f"model version {version} is served but not stored")
            if (current is not None and current.version == version
                    and current.record.created_at == record.created_at):
                return False
            from iglearn.models.archive import load_archive

            algorithm = self.config.model.algorithm
            if record.algorithm != algorithm:
                raise IGLearnError(f"model version {version} is a model of algorithm "
                                   f"{record.algorithm!r} but [model] algorithm is "
                                   f"{algorithm!r}; configure algorithm = "
                                   f"{json.dumps(record.algorithm)}, or start with a new "
                                   f"database")
            try:
                learner = load_archive(storage.model_archive(version), algorithm,
                                       f"model version {version}")
            except IGLearnError as e:  # a damaged stored archive: the way out, offline
                problem = str(e).rsplit("; ", 1)[0]  # its fix is for an upload
                raise IGLearnError(
                    f"{self.config.db_shown}: {problem}; serve an earlier version with "
                    f"iglearn serve db rollback --config FILE (or --version N), or import "
                    f"a model once the service runs") from None
            differs = shape_mismatch(getattr(learner, "metadata_", {}), self.config)
            if differs is not None:
                key, have, value = differs
                raise IGLearnError(f"model version {version} has {key} {have!r} but [model] "
                                   f"{key} is {value!r}; configure {key} = {have!r}, or "
                                   f"serve a model of this shape")
            self.served = Served(version, learner, record, policy_function(learner),  # swap
                                 DriftTally(learner, self.config.model.context_names))
            self._pickup_error = None
        previous = 0 if current is None else current.version
        lag = time.time() - record.created_at
        # at start, the stored version is loaded, not swapped for one served before
        what = (f"now serving model version {version} (was {previous})"
                if self.started else f"serving model version {version}")
        log_event(self.config.server.log_format, "swap",
                  f"{what}, stored {lag:.2f} s ago",
                  version=version, previous=previous, seconds_since_stored=lag,
                  interactions=record.interactions)
        return True

    def pickup(self, storage: Storage, stop: threading.Event) -> None:
        """The pickup thread: every ``pickup_seconds`` until ``stop`` is set, swap in the
        storage's served version (:meth:`load_served` through ``storage``, a connection of
        this thread's own). It shares nothing with the requests but the served reference:
        neither the event loop, whose turns a busy service hands out to requests first, nor
        the requests' database connection and its lock. A version that cannot be loaded is
        logged once (the current model goes on serving) and tried again at each poll."""
        while not stop.wait(self.config.learning.pickup_seconds):
            try:
                self.load_served(storage)
            except StorageUnavailable:  # the outage has its own line (OUTAGE)
                continue
            except Exception as e:  # keep serving the current model; say why, once
                error = (self._attempt, f"{type(e).__name__}: {e}")
                if error != self._pickup_error:
                    self._pickup_error = error
                    log_event(self.config.server.log_format, "pickup_error",
                              f"cannot load model version {error[0]} (still serving "
                              f"{0 if self.served is None else self.served.version}): "
                              f"{error[1]}", version=error[0], error=error[1])

    def start_pickup(self) -> Callable[[], None]:
        """Start the pickup thread (:meth:`pickup`) on a connection of its own; the function
        that stops it and closes the connection."""
        server = self.config.server
        storage = open_storage(self.config.db_path, server.synchronous, pool_size=1)
        stop = threading.Event()
        thread = threading.Thread(target=self.pickup, args=(storage, stop), daemon=True,
                                  name="iglearn-model-pickup")
        thread.start()

        def halt() -> None:
            stop.set()
            thread.join(30)
            if not thread.is_alive():
                storage.close()
        return halt


    def model_info(self) -> dict[str, Any]:
        """GET /v1/model's answer."""
        served = self.served
        models = self.storage.models()
        versions = [{"version": m.version, "created_at": m.created_at,
                     "interactions": m.interactions, "source": m.summary.get("source"),
                     "fit_seconds": m.fit_seconds,
                     "held_back": m.held_back} for m in models]
        _, newest, behind = version_lag(served, models)
        info: dict[str, Any] = {
            "version": 0, "algorithm": self.config.model.algorithm,
            "n_actions": self.config.model.n_actions,
            "context_dim": self.config.model.context_dim,
            "feedback_dim": self.config.model.feedback_dim,
            "settings": self.config.learner_settings(),
            "exploration": asdict(self.config.exploration),
            "fitted_at": None, "interactions": 0, "indicator": None, "lemma5": None,
            "versions": versions, "last_refit": self.storage.state("last_refit"),
            "refit_running": self.storage.state("refit_running"),
            "refit_lease": self.storage.state("refit_lease"),
            "newest_version": newest, "behind_seconds": behind}
        if served is not None:
            summary = served.record.summary
            info |= {"version": served.version, "fitted_at": served.record.created_at,
                     "interactions": served.record.interactions,
                     "indicator": summary.get("indicator"), "lemma5": summary.get("lemma5"),
                     "source": summary.get("source"), "fit_seconds": served.record.fit_seconds}
        return info

    # -- decisions and feedback ---------------------------------------------------------------
    def draw(self, contexts: np.ndarray, ids: list[str], allowed: np.ndarray
             ) -> list[Decision]:
        """Decide for contexts (n, d_x) with their event ids and allowed actions (n, K), not
        yet stored."""
        served = self.served
        policy = None if served is None else served.policy(contexts)
        if served is not None:
            served.drift.add(contexts, served.version, self.config.server.log_format)
        actions, dist, explored, learnable = self.explorer.draw(
            policy, allowed, served.certified if served is not None else False)
        now = time.time()
        version = 0 if served is None else served.version
        chosen = dist[np.arange(len(actions)), actions]
        decisions = [Decision(ids[i], contexts[i], a, p, dist[i], version, e, learn, now)
                     for i, (a, p, e, learn) in enumerate(zip(
                         actions.tolist(), chosen.tolist(), explored.tolist(),
                         learnable.tolist(), strict=True))]
        return decisions

    def decide(self, contexts: np.ndarray, ids: list[str], allowed: np.ndarray
               ) -> list[Decision]:
        """Decide for contexts (n, d_x) with their event ids and allowed actions (n, K), and
        store the decisions (a stored event id gives back its stored decision)."""
        decisions = self.draw(contexts, ids, allowed)
        stored = self.storage.add_decisions(decisions)
        self.metrics.retried(sum(count_decided(self.metrics, decisions, stored)))
        return stored

    def add_feedback(self, feedback: list[Feedback]) -> list[FeedbackOutcome]:
        """Store feedback, each joined to its decision or refused."""
        outcomes = self.storage.add_feedback(feedback, self.config.learning.join_window)
        for outcome in outcomes:
            self.metrics.feedback(outcome.value)
        return outcomes

    # -- keys -------------------------------------------------------------------------------
    def authorise(self, request: Request, role: str) -> None:
        """401 without a valid key (with the ``WWW-Authenticate: Bearer`` challenge HTTP
        requires of a 401), 403 when an admin key is needed and a client one came; both name
        the ``authorization`` header as their field."""
        if self.insecure:
            return
        header = request.headers.get("authorization", "")
        scheme, _, key = header.partition(" ")
        given = key.strip() if scheme.lower() == "bearer" else None
        found = self.keyring.match(given)
        if found is None and given and time.monotonic() - self._keys_read > KEY_RELOAD_SECONDS:
            self.keyring = KeyRing(self.storage.keys())
            self._keys_read = time.monotonic()
            found = self.keyring.match(given)
        if found is None:
            raise Rejected(401, "a valid API key is needed: send 'Authorization: Bearer KEY' "
                                "(create one with 'iglearn serve keys add')", "authorization")
        self.keys_used[found[0]] = time.time()  # written by keys.watch_keys
        if role == "admin" and found[1] != "admin":
            raise Rejected(403, "this endpoint needs an admin key", "authorization")


def count_decided(metrics: Metrics, made: Sequence[Decision], stored: Sequence[Decision]
                  ) -> list[bool]:
    """Count in ``metrics`` the decisions the storage stored anew of those ``made`` (drawn),
    position by position against what it returned (``stored``), and say which of the others
    are retries: a decision whose event id was stored before comes back as the stored one
    (another decision time), not a decision (nor its exploration); two requests of one group
    under one new event id store one decision, the first, and the second is a retry. The
    retries are the caller's to count (:meth:`Metrics.retried`) once their request is
    answered with them: one refused 409 (:func:`check_retries`) is no retry."""
    if all(s is d for s, d in zip(stored, made, strict=True)):  # nothing stored before
        metrics.decided(len(made), sum(d.explored for d in made))
        return [False] * len(made)
    new: dict[str, Decision] = {}
    retried = []
    for s, d in zip(stored, made, strict=True):
        fresh = (s is d or s.decided_at == d.decided_at) and d.event_id not in new
        if fresh:
            new[d.event_id] = d
        retried.append(not fresh)
    metrics.decided(len(new), sum(d.explored for d in new.values()))
    return retried


GATHER_TURNS = 2
"""Turns of the event loop a group of requests waits for more before it runs
(:class:`GroupCommit`). A request whose bytes arrive while a turn runs reaches the queue in
the turn after, so each turn of waiting lets the requests that came meanwhile join. With
``benchmarks/serve_load.py``'s simulated clients on SQLite (the service without re-fits),
waiting 2 turns instead of running at the first cut the service's CPU per interaction from
408-431 to 294-360 µs with 8 clients and from 646 to 398 µs with 4, and the median decide
latency from 1.6 to 1.2-1.3 ms and 1.3 to 0.75 ms; with one client, which has nothing to
group, the median rose from 0.51 to 0.58 ms. Three turns or more did no better."""


class GroupCommit:
    """Decides and stores together the requests that arrive together: each decide or
    feedback request queues its work and waits; the queue is run once the event loop has
    let every ready request reach it and :data:`GATHER_TURNS` more turns have passed (one
    policy evaluation for all queued decisions, and one commit for them and all queued
    feedback: :meth:`Storage.add_interactions
    <iglearn.service.storage.Storage.add_interactions>`), and each request is answered
    after that commit."""

    def __init__(self, service: Service):
        self.service = service
        self.decisions: list[tuple[np.ndarray, list[str], np.ndarray, asyncio.Future]] = []
        self.feedback: list[tuple[Feedback, asyncio.Future]] = []
        self.scheduled = False

    def _schedule(self) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        if not self.scheduled:
            self.scheduled = True
            loop.call_soon(self.gather, GATHER_TURNS)
        return loop.create_future()

    def gather(self, turns: int) -> None:
        """Run the queue (:meth:`run`) after ``turns`` more turns of the event loop, in which
        the requests that arrive meanwhile join it."""
        if turns > 0:
            asyncio.get_running_loop().call_soon(self.gather, turns - 1)
        else:
            self.run()

    async def decide(self, contexts: np.ndarray, ids: list[str], allowed: np.ndarray
                     ) -> tuple[list[Decision], int]:
        """Decisions for ``contexts``, once stored, and how many of them are retries (answered
        with the decision stored before under their event id: :func:`count_decided`), not
        yet counted in the metrics."""
        future = self._schedule()
        self.decisions.append((contexts, ids, allowed, future))
        return await future

    async def add_feedback(self, feedback: Feedback) -> FeedbackOutcome:
        """The outcome of ``feedback``, once stored."""
        future = self._schedule()
        self.feedback.append((feedback, future))
        return await future

    def run(self) -> None:
        """Run everything queued."""
        self.scheduled = False
        decisions, self.decisions = self.decisions, []
        feedback, self.feedback = self.feedback, []
        if self.service.storage.concurrent_writes:
            self.commit_in_threads(decisions, feedback)
            return
        service = self.service
        made: list[Decision] = []
        if decisions:
            try:
                made = service.draw(np.concatenate([d[0] for d in decisions]),
                                    [i for d in decisions for i in d[1]],
                                    np.concatenate([d[2] for d in decisions]))
            except Exception as e:
                for *_, future in decisions:
                    if not future.done():
                        future.set_exception(e)
                decisions, made = [], []
        try:  # the decisions and the feedback in one commit
            stored, outcomes = service.storage.add_interactions(
                made, [f for f, _ in feedback], service.config.learning.join_window)
        except Exception as e:
            for future in [d[3] for d in decisions] + [f for _, f in feedback]:
                if not future.done():  # done: its request went away
                    future.set_exception(e)
            return
        retried = count_decided(service.metrics, made, stored) if decisions else []
        start = 0
        for contexts, _, _, future in decisions:
            end = start + len(contexts)
            if not future.done():
                future.set_result((stored[start:end], sum(retried[start:end])))
            start = end
        for (_, future), outcome in zip(feedback, outcomes, strict=True):
            service.metrics.feedback(outcome.value)
            if not future.done():
                future.set_result(outcome)

    def commit_in_threads(self, decisions: list[tuple[np.ndarray, list[str], np.ndarray,
                                                      asyncio.Future]],
                          feedback: list[tuple[Feedback, asyncio.Future]]) -> None:
        """:meth:`run` for a database server: the decisions are drawn here, but the commits
        run in worker threads, so the event loop goes on reading requests, and the next
        group's commit starts, while the server commits this group's."""
        loop = asyncio.get_running_loop()
        service = self.service

        def settle(futures: list[asyncio.Future], task: asyncio.Future,
                   results: Callable[[Any], list[Any]]) -> None:
            error = task.exception()
            values = [error] * len(futures) if error is not None else results(task.result())
            for future, value in zip(futures, values, strict=True):
                if future.done():  # its request went away
                    continue
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(value)

        if decisions:
            futures = [d[3] for d in decisions]
            try:
                made = service.draw(np.concatenate([d[0] for d in decisions]),
                                    [i for d in decisions for i in d[1]],
                                    np.concatenate([d[2] for d in decisions]))
            except Exception as e:
                for future in futures:
                    if not future.done():
                        future.set_exception(e)
            else:
                def split(stored: list[Decision]) -> list[Any]:
                    retried = count_decided(service.metrics, made, stored)
                    bounds = np.cumsum([0] + [len(d[0]) for d in decisions])
                    return [(stored[a:b], sum(retried[a:b]))
                            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

                task = loop.run_in_executor(None, service.storage.add_decisions, made)
                task.add_done_callback(lambda t: settle(futures, t, split))
        if feedback:
            items, waiting = [f for f, _ in feedback], [f for _, f in feedback]

            def count(outcomes: list[FeedbackOutcome]) -> list[Any]:
                for outcome in outcomes:
                    service.metrics.feedback(outcome.value)
                return list(outcomes)

            joining = loop.run_in_executor(None, service.storage.add_feedback, items,
                                           service.config.learning.join_window)
            joining.add_done_callback(lambda t: settle(waiting, t, count))


# -- request checks ---------------------------------------------------------------------------
async def read_body(request: Request, limit: int) -> bytes:
    """The request body; 413 (the connection closed after it) as soon as it exceeds
    ``limit`` bytes, or 408 (the same) when it has not all arrived within the application's
    ``body_timeout_seconds`` (``[server] body_timeout_seconds``)."""
    body = bytearray()
    await receive_body(request, limit, "(or raise [server] max_body_bytes)", body.extend)
    return bytes(body)


async def receive_body(request: Request, limit: int, how: str,
                       sink: Callable[[bytes], object]) -> int:
    """Pass the request body to ``sink`` as it arrives, a chunk at a time (nothing else holds
    it); its length. 413 (the connection closed after it) as soon as it exceeds ``limit``
    bytes (the message names the limit, then ``how`` to raise it), before the chunk beyond
    it reaches ``sink``; 408 (the same) when it has not all arrived within the
    application's ``body_timeout_seconds`` (``[server] body_timeout_seconds``). A client
    that waits to be told to send its body (``Expect: 100-continue``) and declares a length
    above ``limit`` is answered 413 at once, never told to send it."""
    timeout: float = request.app.state.body_timeout_seconds
    length = request.headers.get("content-length")
    too_large = Rejected(413, f"the body is larger than the limit of {limit} bytes; send "
                              f"at most {limit} bytes {how}", "body", close=True)
    # uvicorn answers "100 Continue" at the first receive: until then such a client sends nothing
    waiting = request.headers.get("expect", "").lower() == "100-continue"
    received, more = 0, True
    try:  # asyncio's timeout: anyio's cancel scope costs several times more per request
        async with asyncio.timeout(timeout):
            if length is not None and (not length.isdigit() or int(length) > limit):
                raise too_large
            waiting = False
            while more:
                message = await request.receive()
                if message["type"] == "http.disconnect":
                    raise ClientDisconnect
                chunk = message.get("body", b"")
                more = message.get("more_body", False)
                received += len(chunk)
                if received > limit:
                    raise too_large
                if chunk:
                    sink(chunk)
    except TimeoutError:
        raise Rejected(408, f"the body did not arrive within {timeout:g} s ([server] "
                            f"body_timeout_seconds)", "body", close=True) from None
    except Rejected:
        if more and not waiting:  # a waiting client has sent no body to drain
            await discard_body(request, timeout)
        raise
    return received


async def discard_body(request: Request, seconds: float) -> None:
    """Read and drop what is left of a refused request's body, for at most ``seconds``: a
    client still sending when the connection closes would get it reset (unread data makes
    the operating system answer with a reset), not the answer."""
    with anyio.move_on_after(seconds):
        while True:
            message = await request.receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                return


BODY_FIX = "send a JSON object of finite numbers, lists and strings"
"""What a 422 for a body the JSON parser refuses tells the client."""


def named_entry(parts: tuple[str | int, ...], context_names: Sequence[str] | None,
                feedback_names: Sequence[str] | None = None) -> str | None:
    """How a message names the vector entry that the place ``parts`` of a refused JSON value
    is (``("context", 2)``, ``("contexts", 0, 2)``, ``("feedback", 1)``) by its name in the
    ``[model] context_names`` or ``feedback_names``: ``context value 'age'``; None when the
    place is no entry of a vector, or its vectors have no names."""
    if not parts:
        return None
    kind, at = {"context": ("context", 1), "contexts": ("context", 2),
                "feedback": ("feedback", 1)}.get(str(parts[0]), ("", 0))
    names = {"context": context_names, "feedback": feedback_names}.get(kind)
    if names is None or len(parts) != at + 1 or type(parts[at]) is not int:
        return None
    i = int(parts[at])
    return f"{kind} value {shown(names[i])}" if 0 <= i < len(names) else None


FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
"""The content types of an HTML form's body."""


def form_encoded(request: Request) -> str | None:
    """The form content type (:data:`FORMS`) ``request`` declares, or None: told when its body
    is no JSON (curl's ``-d`` declares the first for any body, so a JSON body sent so is read
    as JSON)."""
    declared = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return declared if declared in FORMS else None


async def read_json(request: Request, limit: int, allowed: tuple[str, ...],
                    empty_ok: bool = False, context_names: Sequence[str] | None = None,
                    feedback_names: Sequence[str] | None = None) -> dict[str, Any]:
    """The body as a JSON object with only the ``allowed`` keys (422 otherwise), read by the
    one strict JSON parser (:func:`iglearn.data.safejson.parse`: finite numbers, integers
    bounded before conversion; a refused value's top-level key is the field, its message names
    the place: ``contexts[0][3]``, and with ``context_names`` or ``feedback_names`` (``[model]``)
    a vector's entry by its name too, :func:`named_entry`); ``empty_ok``: no body at all is
    ``{}`` (an endpoint whose fields are all optional). A body sent compressed (a
    ``Content-Encoding`` other than ``identity``, such as ``gzip``) is refused 415 naming the
    header: the service reads plain JSON only; so is a form's body that is no JSON
    (:func:`form_encoded`), naming ``content-type``."""
    body = await read_body(request, limit)
    coding = request.headers.get("content-encoding", "").strip()
    if coding.lower() not in ("", "identity"):
        raise Rejected(415, f"the body is sent with Content-Encoding {shown(coding)}; this "
                            f"endpoint reads plain JSON: send it uncompressed, without "
                            f"Content-Encoding", "content-encoding")
    if empty_ok and not body.strip():
        return {}
    try:
        value = safejson.parse(body, "the body", BODY_FIX)
    except safejson.Refused as e:  # the field: the top-level key where the value is
        form = form_encoded(request)
        if form is not None and not e.parts:
            raise Rejected(415, f"the body is {form} (Content-Type: {form}), where this "
                                f"endpoint reads a JSON object; send JSON with Content-Type: "
                                f"application/json (curl: --json '{{...}}')",
                           "content-type") from None
        field = e.parts[0] if e.parts and isinstance(e.parts[0], str) and e.parts[0] \
            else "body"
        named = named_entry(e.parts, context_names, feedback_names)
        message = str(e) if named is None else (f"the body: {e.where} ({named}) "
                                                f"{e.problem}; {BODY_FIX}")
        raise Rejected(422, message, field) from None
    if not isinstance(value, dict):
        raise Rejected(422, "the body must be a JSON object", "body")
    for key in value:
        if key not in allowed:
            raise Rejected(422, f"unknown field {shown(key)}; the fields are "
                                f"{', '.join(allowed) or 'none'}", key or "body")
    return value


SERVED_UNITS_FIX = "send it in the unit and from the origin of the model's log"
"""What a 422 for a vector value beyond :data:`~iglearn.data.limits.MAX_ABS_VALUE` tells the
client. No log holding such a value is read (:data:`~iglearn.data.limits.TOO_LARGE_FIX`), so
the client is sending a raw time stamp or counter that the model's log had shifted or
rescaled."""


def entry(i: int, names: Sequence[str] | None, kind: str = "context") -> str:
    """How a message names entry ``i`` of a vector: ``value 2``, or with the ``names`` of
    the ``kind`` of vector (``[model] context_names``, ``feedback_names``) ``context value
    'age' (entry 2)``."""
    if names is None or not 0 <= i < len(names):
        return f"value {i}"
    return f"{kind} value {shown(names[i])} (entry {i})"


def expected(dim: int, names: Sequence[str] | None) -> str:
    """The ``dim`` values a vector holds, as a message says it, naming the context's
    ``names`` (``[model] context_names``) if it has them."""
    return f"{dim}" if names is None else f"{dim} ({', '.join(map(shown, names))})"


def by_name(value: dict, name: str, names: Sequence[str], kind: str = "context") -> list:
    """A ``kind`` of vector (context, feedback) sent as a JSON object keyed by its ``[model]
    context_names`` or ``feedback_names`` (``names``), in any order, as the list of its values
    in their order; an unknown or missing name is a 422 naming it (``name``: the JSON
    field)."""
    known = set(names)
    unknown = next((key for key in value if key not in known), None)
    if unknown is not None:
        raise Rejected(422, f"unknown {kind} value {shown(unknown)}; the {kind}'s values are "
                            f"{', '.join(map(shown, names))}", name)
    missing = [key for key in names if key not in value]
    if missing:
        listed = ", ".join(map(shown, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise Rejected(422, f"misses {len(missing)} of the {len(names)} {kind} values "
                            f"({listed}); send every one", name)
    return [value[key] for key in names]


def vector(value: object, name: str, dim: int, names: Sequence[str] | None = None,
           kind: str = "context") -> np.ndarray:
    """A list of ``dim`` finite numbers within the value limit, as float32 (422 naming
    ``name``, the JSON field, otherwise; with ``names``, the ``[model] context_names`` or
    ``feedback_names`` of this ``kind`` of vector, the message names the entry by its column
    name, and the vector may be a JSON object of its values by those names:
    :func:`by_name`)."""
    if isinstance(value, dict) and names is not None:
        value = by_name(value, name, names, kind)
    if not isinstance(value, list):
        hint = ""
        if isinstance(value, dict):
            hint = f"; a {kind} by name (a JSON object) needs [model] {kind}_names"
        raise Rejected(422, f"must be a list of {expected(dim, names)} numbers{hint}", name)
    if value and all(isinstance(v, list) for v in value):
        batch = ("; several contexts go in 'contexts'" if name == "context"
                 else "; send one vector")
        raise Rejected(422, f"holds lists, not numbers; it must be one list of "
                            f"{expected(dim, names)} numbers{batch}", name)
    if len(value) != dim:
        raise Rejected(422, f"has {len(value)} values; the service expects "
                            f"{expected(dim, names)}", name)
    if not set(map(type, value)) <= _NUMBER_TYPES:
        i = next(i for i, v in enumerate(value) if type(v) not in _NUMBER_TYPES)
        raise Rejected(422, f"{entry(i, names, kind)} is not a number", name)
    array = np.asarray(value, dtype=np.float64)
    if not (np.abs(array) <= limits.MAX_ABS_VALUE).all():  # one check for the usual case
        bad = ~np.isfinite(array)
        if bad.any():
            raise Rejected(422, f"{entry(int(np.argmax(bad)), names, kind)} is not finite (NaN or "
                                f"infinite)", name)
        i = int(np.argmax(np.abs(array) > limits.MAX_ABS_VALUE))
        sent = f"{array[i]:g}"
        if abs(float(sent)) <= limits.MAX_ABS_VALUE:  # rounded into the limit: as sent
            sent = repr(float(array[i]))
        value_is = f"({sent})" if names is None else f"is {sent}, which"
        raise Rejected(422, f"{entry(i, names, kind)} {value_is} exceeds "
                            f"±{limits.MAX_ABS_VALUE:g}, the most a log may hold; "
                            f"{SERVED_UNITS_FIX}", name)
    return array.astype(np.float32)


def event_id(value: object, name: str, max_length: int) -> str:
    """An event id: 1 to ``max_length`` characters of letters, digits and ``._:-``; a new
    one (:func:`~iglearn.service.ids.new_event_id`) when none is given."""
    if value is None:
        return new_event_id()
    if not isinstance(value, str) or not 0 < len(value) <= max_length \
            or not _EVENT_ID.fullmatch(value):
        raise Rejected(422, f"must be a string of 1 to {max_length} letters, digits or . _ : -",
                       name)
    return value


def decision_id(body: Mapping[str, Any], max_length: int) -> str:
    """The ``event_id`` of a feedback body: the decision it answers, which the body must name
    (422 when it is absent or null; :func:`event_id` would make up a new one)."""
    value = body.get("event_id")
    if value is None:
        raise Rejected(422, "missing: the event id of the decision this feedback answers",
                       "event_id")
    return event_id(value, "event_id", max_length)


def check_action_names(schema: FeatureSchema | None, names: tuple[str, ...] | None) -> None:
    """Refuse (422, field ``actions``) an imported model fitted on named actions
    (``--actions``, kept in its feature ``schema``) whose names, in index order, are not the
    service's ``[model] actions``: its action 0 would be another action. A model fitted on
    action indices, or a service without names, reads the indices as they are."""
    fitted = None if schema is None else schema.action_names
    if fitted is None or names is None or tuple(fitted) == tuple(names):
        return
    option = option_list(names)
    if len(option) > SHOWN_CHARACTERS:  # too long to be of use in a message
        option = "naming them so"
    raise Rejected(422, f"the model was fitted on the actions {shown(list(fitted))} (in index "
                        f"order); this service's [model] actions are {shown(list(names))}: "
                        f"fit it with --actions {option}, or name the actions in the "
                        f"configuration as the model does", "actions")


def check_column_names(schema: FeatureSchema | None, names: tuple[str, ...] | None,
                       kind: str = "context") -> None:
    """Refuse (422, field ``context_names`` or ``feedback_names``) an imported model fitted
    on ``kind`` columns (context, feedback) other than those this service serves, in its
    order: it would read each entry of a decision's context, or of a feedback, as another
    feature. With ``[model] context_names`` or ``feedback_names`` a model fitted on named
    columns (its feature ``schema``'s column mapping) must have those names in that order;
    without them the service serves positions, and a model whose features are positional
    names (``x^x0``, ``x^x1``, ...: one fitted on the service's DSJSON export) must have
    them in position order. A model fitted on arrays, or on columns of other names for a
    service without names, is not checked."""
    if schema is None:
        return
    if names is None:
        from iglearn.data.formats.base import FeatureSchema

        features = tuple(getattr(schema, kind))
        positional = FeatureSchema.default(len(features), len(features))
        expected = getattr(positional, kind)
        prefix = expected[0][:-1] if expected else ""
        if features == expected or not all(
                name.startswith(prefix) and name[len(prefix):].isdigit() for name in features):
            return
        at = next(i for i, (a, b) in enumerate(zip(features, expected, strict=True)) if a != b)
        raise Rejected(422, f"the model was fitted on the {kind} columns "
                            f"{shown(list(features))}, not in the order this service serves "
                            f"them (its column {at} is {features[at]!r}, the service's "
                            f"{expected[at]!r}): it would read each entry as another "
                            f"feature; fit it on the log with its columns in order (the "
                            f".npz or .parquet export, or a DSJSON export iglearn wrote)",
                       f"{kind}_names")
    columns = None if schema.columns is None else getattr(schema.columns, kind)
    if columns is None or tuple(columns) == tuple(names):
        return
    how = ("in another order" if sorted(columns) == sorted(names) else "of other names")
    raise Rejected(422, f"the model was fitted on the {kind} columns {shown(list(columns))}, "
                        f"{how} than this service's [model] {kind}_names "
                        f"{shown(list(names))}: it would read each entry as another feature; "
                        f"fit it with the {kind} columns in the service's order (--{kind} "
                        f"{option_list(names)})", f"{kind}_names")


def refuse_whole_float(value: object, what: str, field: str) -> None:
    """422 naming ``field`` for a whole number sent as a float (``1.0``, as numpy's float64
    passes through Python's json) where an integer (``what``) is meant: told as not an
    integer, rather than as a value out of range or unknown, which it seems not to be."""
    if type(value) is float and value.is_integer():
        raise Rejected(422, f"{value!r} is not an integer; send {what} as one "
                            f"({int(value)}, not {value!r})", field)


def allowed_actions(value: object, n_actions: int,
                    names: Sequence[str] | None = None) -> np.ndarray:
    """The allowed-actions mask (K,) from a list of distinct actions: indices, or with the
    actions' ``names`` (``[model] actions``) their names too."""
    mask = np.zeros(n_actions, dtype=bool)
    if value is None:
        mask[:] = True
        return mask
    if not isinstance(value, list) or not value:
        raise Rejected(422, "must be a non-empty list of action indices", "actions")
    index = {} if names is None else {name: i for i, name in enumerate(names)}
    for v in value:
        if isinstance(v, str) and v in index:
            v = index[v]
        refuse_whole_float(v, "an action index", "actions")
        if type(v) is not int or not 0 <= v < n_actions:
            named = "" if names is None else " or an action's name"
            raise Rejected(422, f"{v!r} is not an action index in [0, {n_actions}){named}",
                           "actions")
        if mask[v]:
            raise Rejected(422, f"action {v} is listed twice", "actions")
        mask[v] = True
    return mask


MAX_SECONDS = 1e12
"""Largest magnitude of a time (Unix seconds; ISO 8601 dates end before 2.6e11) or a
duration a query parameter may give."""


def check_query(request: Request, names: tuple[str, ...]) -> None:
    """Refuse (422 naming it) a query parameter that is not one of ``names``, the ones the
    endpoint reads (a misspelt ``wait`` or ``since`` would otherwise be ignored, and the
    request answered as if it had not been given), and one given more than once (which of
    the values would count?)."""
    if not request.scope.get("query_string"):  # most requests: nothing to parse
        return
    params = request.query_params
    for key in params:
        if not key:
            raise Rejected(422, "a query parameter has no name", "query")
        if key not in names:
            reads = ", ".join(names) if names else "none"
            raise Rejected(422, f"is not a query parameter of this endpoint (it reads {reads})",
                           key)
        if len(params.getlist(key)) > 1:
            raise Rejected(422, "is given more than once; give it once", key)


def iso_time(value: str) -> datetime:
    """An ISO 8601 time, read as a query parameter gives it: an offset's ``+`` left
    unencoded in a URL arrives as a space (``...T16:00:00 05:00``), read as the ``+``."""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        offset = _SPACED_OFFSET.fullmatch(value)
        if offset is None:
            raise
        return datetime.fromisoformat(f"{offset[1]}+{offset[2]}")


_SPACED_OFFSET = re.compile(r"(.*T.*\d) (\d\d(?::?\d\d)?)")
"""A time whose UTC offset's ``+`` arrived as a space."""


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
"""A number as a query parameter writes it: ASCII digits, a point, an exponent."""


def query_number(value: str) -> float:
    """A number given in a query parameter (``10``, ``2.5``, ``1e3``, ``-3``); ValueError for
    what Python's ``float`` reads but no client means: ``1_0`` (read as 10), digits of
    other scripts (``٣``, read as 3), surrounding spaces, ``inf`` or ``nan``."""
    if _DECIMAL.fullmatch(value) is None:
        raise ValueError(f"not a decimal number: {value!r}")
    return float(value)


def timestamp(value: str | None, name: str) -> float | None:
    """A time given as Unix seconds or ISO 8601 within ±:data:`MAX_SECONDS` (422 naming
    ``name`` otherwise: not a time, not finite, a date that has no Unix time)."""
    if value is None or value == "":
        return None
    try:
        seconds = query_number(value)
    except ValueError:
        try:
            seconds = iso_time(value).timestamp()
        except (ValueError, OverflowError, OSError) as e:  # a date out of range, say
            reason = f" ({e})" if not isinstance(e, ValueError) or "range" in str(e) else ""
            raise Rejected(422, f"must be Unix seconds or an ISO 8601 time{reason}",
                           name) from None
    if not (math.isfinite(seconds) and abs(seconds) <= MAX_SECONDS):
        raise Rejected(422, f"must be a finite time within ±{MAX_SECONDS:g} seconds", name)
    return seconds


# -- the application ------------------------------------------------------------------------
Handler = Callable[[Request], Awaitable[Response]]


def endpoint(service: Service, name: str, role: str | None, handler: Handler,
             params: tuple[str, ...] | None = ()) -> Handler:
    """``handler`` behind the service's checks: the key's role (``None``: no key needed), the
    query parameters it reads (``params``; any other is refused, :func:`check_query`; None:
    any is let through, as a page's), a refused request answered with its status and the
    field it names (an iglearn error: 422), and the latency recorded under ``name`` in the
    metrics."""
    async def wrapped(request: Request) -> Response:
        start = time.perf_counter()
        try:
            if role is not None:
                service.authorise(request, role)
            if params is not None:
                check_query(request, params)
            response = await handler(request)
        except Rejected as e:
            body: dict[str, Any] = {"error": e.message}
            if e.field is not None:
                body["field"] = e.field
            headers = {} if e.retry_after is None else {"retry-after": str(e.retry_after)}
            if e.close:
                headers["connection"] = "close"
            if e.status == 401:  # the challenge HTTP requires of a 401 (RFC 9110, 11.6.1)
                headers["www-authenticate"] = 'Bearer realm="iglearn"'
            response = json_response(body, e.status, headers or None)
        except StorageUnavailable as e:
            response = unreachable(e)
        except IGLearnError as e:
            response = json_response({"error": str(e)}, 422)
        service.metrics.observe(name, response.status_code, time.perf_counter() - start)
        return response
    return wrapped


def by_method(handlers: Mapping[str, Handler]) -> Handler:
    """One route's handler for the methods its path takes (``handlers``: method -> handler,
    HEAD answered as GET): a path registered once per method would answer another method's
    405 with the first route's methods only in its ``Allow`` header."""
    async def dispatch(request: Request) -> Response:
        method = request.method
        return await handlers["GET" if method == "HEAD" else method](request)
    return dispatch


CORS_ALLOW_HEADERS = b"Authorization, Content-Type, Content-Encoding"
"""The request headers the service reads that a page may send (a preflight's answer): the
key, the body's type, and its encoding (refused 415, with a message, rather than by the
browser)."""
CORS_EXPOSE_HEADERS = b"Retry-After, WWW-Authenticate, Content-Disposition, iglearn-feedback"
"""The response headers the service sets that a page may read."""
CORS_MAX_AGE = b"600"
"""Seconds a browser may keep a preflight's answer."""


def cors_headers(origin: bytes, methods: str | None = None) -> list[tuple[bytes, bytes]]:
    """The CORS headers of an answer to ``origin``, one ``[server] cors_origins`` allows:
    a preflight's (``methods``: those of its path) or any other answer's (None)."""
    headers = [(b"access-control-allow-origin", origin), (b"vary", b"Origin")]
    if methods is None:
        return [*headers, (b"access-control-expose-headers", CORS_EXPOSE_HEADERS)]
    return [*headers, (b"access-control-allow-methods", methods.encode()),
            (b"access-control-allow-headers", CORS_ALLOW_HEADERS),
            (b"access-control-max-age", CORS_MAX_AGE)]


def request_header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of the request header ``name`` (lower case), or None."""
    return next((value for key, value in scope["headers"] if key == name), None)


class ServiceApp(Starlette):
    """The service's Starlette application, with a direct way in for the requests that come
    by the thousand per second: a POST to one of the ``hot`` paths (decide, feedback and the
    no-op) goes straight to its handler (the same :func:`endpoint`-wrapped function its
    route holds) instead of through Starlette's middleware, router and exception
    wrappers, which cost a request about as much CPU time as parsing its body. Every other
    request (other methods and paths, lifespan) takes Starlette's way.

    With ``[server] cors_origins`` (:attr:`cors_origins`), CORS is answered here, before
    either way, so that every route, hot or not, answers it alike: a preflight is answered
    at once (:meth:`preflight`), and every other answer to an allowed origin gets
    :func:`cors_headers`."""

    hot: dict[str, Handler] = {}
    """Path -> handler of the POST routes taken directly."""
    cors_origins: frozenset[str] = frozenset()
    """The origins allowed to call the service from a browser, in lower case (``*``: any);
    empty: no CORS."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.cors_origins:
            origin = request_header(scope, b"origin")
            if origin is not None:
                allowed = ("*" in self.cors_origins
                           or origin.decode("latin-1").lower() in self.cors_origins)
                asked = request_header(scope, b"access-control-request-method") is not None
                if asked and scope["method"] == "OPTIONS" \
                        and await self.preflight(scope, receive, send, origin, allowed):
                    return
                if allowed:
                    send = with_headers(send, cors_headers(origin))
        if scope["type"] == "http" and scope["method"] == "POST" \
                and not scope.get("root_path"):
            handler = self.hot.get(scope["path"])
            if handler is not None:
                scope["app"] = self
                request = Request(scope, receive, send)
                try:
                    response = await handler(request)
                except Exception as e:  # answered as Starlette's way would, and re-raised
                    await (await internal_error(request, e))(scope, receive, send)
                    raise
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def preflight(self, scope: Scope, receive: Receive, send: Send, origin: bytes,
                        allowed: bool) -> bool:
        """Answer a CORS preflight, which needs no key: 403 naming the field ``origin`` for
        an origin not allowed; 204 with :func:`cors_headers` and the methods of its path for
        an allowed one. False (not answered) for a path no route serves: the router's 404."""
        if not allowed:
            shown_origin = shown(origin.decode("latin-1"))
            await json_response({"error": f"origin {shown_origin} may not call this service "
                                          f"from a browser; add it to [server] cors_origins",
                                 "field": "origin"}, 403)(scope, receive, send)
            return True
        path = scope["path"]
        methods = next((route.methods for route in self.routes if isinstance(route, Route)
                        and route.methods and route.path_regex.match(path)), None)
        if methods is None:
            return False
        await send({"type": "http.response.start", "status": 204,
                    "headers": cors_headers(origin, ", ".join(sorted(methods)))})
        await send({"type": "http.response.body", "body": b""})
        return True


def with_headers(send: Send, headers: list[tuple[bytes, bytes]]) -> Send:
    """``send`` adding ``headers`` to the answer's head."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()), *headers]}
        await send(message)
    return sending


async def http_error(request: Request, exc: Exception) -> Response:
    """The router's 404 (no such endpoint, naming where the application's endpoints are:
    ``/demo`` too beside a demo page) and 405 (a method the endpoint does not take, its
    ``Allow`` header kept, its methods sorted) in the service's JSON, naming the path or the
    method."""
    assert isinstance(exc, HTTPException)
    path, method = request.url.path, request.method
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        tops = [*dict.fromkeys("/" + route.path.split("/")[1] for route in request.app.routes
                               if isinstance(route, Route))]
        under = ", ".join(tops[:-1]) + f" and {tops[-1]}" if len(tops) > 1 else tops[0]
        body = {"error": f"no endpoint {path}; the endpoints are under {under}",
                "field": "path"}
    elif exc.status_code == 405:  # Starlette lists a route's methods as a set: sorted here
        allowed = ", ".join(sorted(m.strip() for m in headers.get("Allow", "").split(",")))
        headers["Allow"] = allowed
        body = {"error": f"{path} does not take {method}; it takes {allowed}",
                "field": "method"}
    else:
        body = {"error": str(exc.detail)}
    return json_response(body, exc.status_code, headers or None)


def unreachable(error: StorageUnavailable) -> Response:
    """The 503 of a request that needs the database while it cannot be reached, with
    ``Retry-After`` (:data:`UNREACHABLE_RETRY_SECONDS`); the outage itself has its lines in
    the operator's log (:data:`~iglearn.service.operator_log.OUTAGE`)."""
    return json_response({"error": str(error)}, 503,
                         {"retry-after": str(UNREACHABLE_RETRY_SECONDS)})


async def internal_error(request: Request, exc: Exception) -> Response:
    """An uncaught error's 500 in the service's JSON (the error and its traceback go to the
    service's log); an unreachable database's 503 (:func:`unreachable`)."""
    if isinstance(exc, StorageUnavailable):
        return unreachable(exc)
    return json_response({"error": f"internal error ({type(exc).__name__}); see the "
                                   f"service's log"}, 500, {"connection": "close"})


def check_retries(stored: Sequence[Decision], contexts: np.ndarray, allowed: np.ndarray,
                  field: str) -> None:
    """Refuse (409) a decision whose event id was stored before with another context, or
    whose stored action the request's allowed actions (``allowed``, (K,)) exclude: a retry
    (which gets the stored decision back) sends what it sent first, so another request under
    a stored id is a second decision, which would be answered with the first one's action
    and joined to the first one's context. The other decisions of a batch are stored: sent
    again with that id changed, they come back as stored."""
    for i, (decision, context) in enumerate(zip(stored, contexts, strict=True)):
        where = field if field == "event_id" else f"{field}[{i}]"
        if not np.array_equal(decision.context, context.astype(np.float32)):
            raise Rejected(409, f"event id {decision.event_id} is already stored with another "
                                f"context (a retry sends the same context); give this "
                                f"decision a new event id", where)
        if not allowed[decision.action]:
            raise Rejected(409, f"event id {decision.event_id} is already stored with action "
                                f"{decision.action}, which this request's actions exclude (a "
                                f"retry sends the same actions); give this decision a new "
                                f"event id", where)


def build_app(service: Service, start_worker: bool = True,
              extra_routes: Sequence[BaseRoute] = ()) -> Starlette:
    """The ASGI application of ``service``; ``start_worker``: run the learning worker
    process while the application runs; ``extra_routes``: more routes (pages, say)."""
    config, storage = service.config, service.storage
    model, server = config.model, config.server
    k = model.n_actions
    names = model.context_names

    def guarded(name: str, role: str | None, handler: Handler,
                params: tuple[str, ...] = ()) -> Handler:
        return endpoint(service, name, role, handler, params)


    group = GroupCommit(service)

    async def decide_rows(contexts: np.ndarray, ids: list[str], mask: np.ndarray,
                          field: str) -> list[dict]:
        allowed = np.repeat(mask[None], len(contexts), 0)
        stored, retried = await group.decide(contexts, ids, allowed)
        check_retries(stored, contexts, mask, field)
        service.metrics.retried(retried)  # answered: a request refused 409 is no retry
        return [{"event_id": d.event_id, "action": d.action,
                 **({} if model.actions is None else {"action_name": model.actions[d.action]}),
                 "probability": d.probability, "probabilities": d.probabilities.tolist(),
                 "model_version": d.model_version, "explored": d.explored} for d in stored]

    async def decide(request: Request) -> Response:
        body = await read_json(request, server.max_body_bytes,
                               ("context", "event_id", "actions", "contexts", "event_ids"),
                               context_names=names)
        mask = allowed_actions(body.get("actions"), k, model.actions)
        if "contexts" in body:
            if "context" in body:
                raise Rejected(422, "the body has both context and contexts; send one of the "
                                    "two: context for one decision, contexts for a batch",
                               "context")
            if "event_id" in body:
                raise Rejected(422, "a batch decision (contexts) takes event_ids, one per "
                                    "context, not event_id", "event_id")
            contexts = body["contexts"]
            if not isinstance(contexts, list) or not 0 < len(contexts) <= server.max_batch:
                raise Rejected(422, f"must be a list of 1 to {server.max_batch} contexts",
                               "contexts")
            array = np.stack([vector(c, f"contexts[{i}]", model.context_dim, names)
                              for i, c in enumerate(contexts)])
            given = body.get("event_ids")
            if given is not None and (not isinstance(given, list)
                                      or len(given) != len(contexts)):
                raise Rejected(422, "must be a list with one event id per context",
                               "event_ids")
            ids = [event_id(None if given is None else given[i], f"event_ids[{i}]",
                            server.event_id_max_length) for i in range(len(contexts))]
            twice = next((i for i, eid in enumerate(ids) if eid in ids[:i]), None)
            if twice is not None:
                raise Rejected(422, f"event id {ids[twice]} appears twice (at "
                                    f"{ids.index(ids[twice])} and {twice}); give each decision "
                                    f"its own", f"event_ids[{twice}]")
            return json_response({"decisions": await decide_rows(array, ids, mask,
                                                                 "event_ids")})
        if "event_ids" in body:
            raise Rejected(422, "event_ids goes with contexts (a batch)", "event_ids")
        if "context" not in body:
            raise Rejected(422, "missing: send context (or contexts for a batch)", "context")
        array = vector(body["context"], "context", model.context_dim, names)[None]
        ids = [event_id(body.get("event_id"), "event_id", server.event_id_max_length)]
        return json_response((await decide_rows(array, ids, mask, "event_id"))[0])

    async def feedback(request: Request) -> Response:
        body = await read_json(request, server.max_body_bytes,
                               ("event_id", "feedback", "definitely_bad"),
                               feedback_names=model.feedback_names)
        eid = decision_id(body, server.event_id_max_length)
        if "feedback" not in body:
            raise Rejected(422, "missing", "feedback")
        values = vector(body["feedback"], "feedback", model.feedback_dim, model.feedback_names,
                        "feedback")
        bad = body.get("definitely_bad")
        bad = False if bad is None else bad  # null, as the other optional fields: absent
        if not isinstance(bad, bool):
            raise Rejected(422, "must be true or false", "definitely_bad")
        outcome = await group.add_feedback(Feedback(eid, values, bad, time.time()))
        if outcome is FeedbackOutcome.UNKNOWN:
            raise Rejected(404, f"no decision has event id {eid}", "event_id")
        if outcome is FeedbackOutcome.DUPLICATE:
            raise Rejected(409, f"event {eid} already has its feedback", "event_id")
        return Response(status_code=204, headers={"iglearn-feedback": outcome.value})

    async def noop(request: Request) -> Response:
        await read_json(request, server.max_body_bytes,
                        ("context", "event_id", "actions", "feedback", "definitely_bad"))
        return json_response({})

    async def get_model(request: Request) -> Response:
        return json_response(await anyio.to_thread.run_sync(service.model_info))

    def no_worker(deaths: int) -> None:
        """503 naming why, while this process's learning worker does not run or has died
        since a re-fit was asked (``deaths``: its count then)."""
        worker = service.worker
        if worker is None:
            return
        problem = worker.problem()
        if problem is None and worker.deaths != deaths:
            problem = ("the learning worker died while this re-fit was waited for; another "
                       "has started and takes the request up")
        if problem is not None:
            raise Rejected(503, f"{problem}; ask again then", retry_after=worker.retry_after())

    async def refit(request: Request) -> Response:
        asked = request.query_params.get("wait")
        try:
            wait = 0.0 if asked is None else query_number(asked)
        except ValueError:
            wait = math.nan
        if not 0 <= wait <= 600:  # NaN too
            raise Rejected(422, "must be seconds in [0, 600]", "wait")
        deaths = -1 if service.worker is None else service.worker.deaths
        no_worker(deaths)
        requested = time.time()
        storage.set_state("refit_requested_at", requested)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            no_worker(deaths)
            last = storage.state("last_refit") or {}
            if last.get("at", 0.0) >= requested:
                if last.get("error"):
                    raise Rejected(409, f"the re-fit failed: {last['error']}")
                await anyio.to_thread.run_sync(service.load_served)  # may wait on a pickup
                return json_response(service.model_info())
            await asyncio.sleep(0.05)
        return json_response({"status": "requested", "requested_at": requested}, 202)

    async def rollback(request: Request) -> Response:
        body = await read_json(request, server.max_body_bytes, ("version",), empty_ok=True)
        models = storage.models()
        versions = [m.version for m in models]
        current = service.served.version if service.served is not None else 0
        target = body.get("version")
        if target is None:  # the served version before, not a re-fit that was held back
            older = [m.version for m in models
                     if m.version < current and not m.held_back]
            if not older:
                raise Rejected(409, "no earlier model version is stored", "version")
            target = max(older)
        refuse_whole_float(target, "a version", "version")
        if type(target) is not int or target not in versions:
            raise Rejected(422, f"{target!r} is not a stored version ({versions})", "version")
        storage.serve(target)
        log_event(server.log_format, "rollback",
                  f"rolled back: serving model version {target} (was {current})",
                  version=target, previous=current)
        await anyio.to_thread.run_sync(service.load_served)  # may wait on a pickup
        return json_response(service.model_info())

    async def export(request: Request) -> Response:
        served = service.served
        if served is None:
            raise Rejected(404, "no model has been fitted yet")
        data = storage.model_archive(served.version)
        name = f"iglearn-model-v{served.version}.tar.gz"
        return Response(data, media_type="application/gzip",
                        headers={"content-disposition": f'attachment; filename="{name}"'})

    async def import_model(request: Request) -> Response:
        """The upload is written to an unnamed temporary file as it arrives (never held in
        memory whole) and unpacked from it as a stream within the archive's byte budgets
        (:mod:`iglearn.models.archive`)."""
        from iglearn.models.archive import GZIP_MAGIC, MAX_ARCHIVE_BYTES, load_archive

        import_limit = min(server.max_body_bytes * IMPORT_SIZE_FACTOR, MAX_ARCHIVE_BYTES)
        import_how = (f"({IMPORT_SIZE_FACTOR} times [server] max_body_bytes, at most "
                      f"{MAX_ARCHIVE_BYTES}, iglearn.models.archive.MAX_ARCHIVE_BYTES)")

        def write(chunk: bytes) -> None:  # no gzip stream: refused at its first bytes
            at, magic = upload.tell(), GZIP_MAGIC
            if at < len(magic) and not magic[at:].startswith(chunk[:len(magic) - at]):
                raise Rejected(422, "the uploaded model: not a gzip-compressed tar archive of "
                                    "a model folder (it does not start as gzip does); send "
                                    "the archive GET /v1/model/export gives", "body",
                               close=True)
            upload.write(chunk)

        with tempfile.TemporaryFile(prefix="iglearn-upload-") as upload:  # gone when closed
            size = await receive_body(request, import_limit, import_how, write)
            upload.seek(0)
            try:
                learner = await anyio.to_thread.run_sync(
                    lambda: load_archive(upload, None, "the uploaded model", size))
            except IGLearnError as e:
                raise Rejected(422, str(e), "body") from None
            upload.seek(0)
            data = upload.read()  # within the limit, and unpacked within its budgets
        differs = shape_mismatch(getattr(learner, "metadata_", {}), service.config)
        if differs is not None:  # load_model sets metadata_
            key, have, value = differs
            raise Rejected(422, f"the model's {key} is {have!r}; this service needs {value!r}",
                           key)
        check_action_names(getattr(learner, "schema_", None), model.actions)
        check_column_names(getattr(learner, "schema_", None), model.context_names)
        check_column_names(getattr(learner, "schema_", None), model.feedback_names, "feedback")
        report = getattr(learner, "report_", None)
        indicator = getattr(report, "indicator", None)
        summary = {"source": "import", "indicator": indicator, "certified": False}
        previous = service.served.version if service.served is not None else 0
        record = storage.add_model(model.algorithm, 0, 0.0, summary, data)
        log_event(server.log_format, "import",
                  import_message(record.version, previous, indicator),
                  version=record.version, previous=previous, indicator=indicator,
                  bytes=len(data))
        await anyio.to_thread.run_sync(service.load_served)  # may wait on a pickup
        return json_response(service.model_info(), 201)

    async def export_log(request: Request) -> Response:
        params = request.query_params
        since = timestamp(params.get("since"), "since")
        until = timestamp(params.get("until"), "until")
        if since is not None and until is not None and since > until:
            raise Rejected(422, f"is before since ({params['until']} < {params['since']}): the "
                                f"window is empty", "until")
        fmt = params.get("format", "parquet")
        if fmt not in LOG_FORMATS:
            raise Rejected(422, f"must be one of {', '.join(LOG_FORMATS)}", "format")
        data = await anyio.to_thread.run_sync(lambda: write_log(service, since, until, fmt))
        if data is None:
            raise Rejected(404, "no joined interactions in that time window")
        return Response(data, media_type=LOG_FORMATS[fmt], headers={
            "content-disposition": f'attachment; filename="iglearn-log.{fmt}"'})

    async def healthz(request: Request) -> Response:
        """Liveness: never waits on the database (an outage is no reason to restart the
        process); it says ``degraded`` while the database's last use failed."""
        served = service.served
        problem = storage.unreachable
        if problem is None and service.worker is not None:
            problem = service.worker.problem()
        answer = {"status": "ok" if problem is None else "degraded",
                  "iglearn": iglearn.__version__,
                  "model_version": 0 if served is None else served.version}
        return json_response(answer if problem is None else answer | {"problem": problem})

    async def readyz(request: Request) -> Response:
        problem = await anyio.to_thread.run_sync(service.database_problem)
        if problem is None and service.worker is not None:
            problem = service.worker.problem()
        if problem is not None:
            return json_response({"ready": False, "problem": problem}, 503)
        return json_response({"ready": True})

    async def metrics(request: Request) -> Response:
        served, models = service.served, await anyio.to_thread.run_sync(storage.models)
        text = service.metrics.render(served, models, version_lag(served, models))
        if service.worker is not None:
            text += service.worker.metrics()
        return Response(text, media_type="text/plain; version=0.0.4")

    hot = {"/v1/decide": guarded("decide", "client", decide),
           "/v1/feedback": guarded("feedback", "client", feedback),
           "/v1/noop": guarded("noop", "client", noop)}
    routes = [
        *(Route(path, handler, methods=["POST"]) for path, handler in hot.items()),
        Route("/v1/model", by_method({"GET": guarded("model", "client", get_model),
                                      "PUT": guarded("import", "admin", import_model)}),
              methods=["GET", "PUT"]),
        Route("/v1/model/refit", guarded("refit", "admin", refit, ("wait",)), methods=["POST"]),
        Route("/v1/model/rollback", guarded("rollback", "admin", rollback), methods=["POST"]),
        Route("/v1/model/export", guarded("export", "admin", export), methods=["GET"]),
        Route("/v1/log", guarded("log", "admin", export_log, ("since", "until", "format")),
              methods=["GET"]),
        Route("/healthz", guarded("healthz", None, healthz), methods=["GET"]),
        Route("/readyz", guarded("readyz", None, readyz), methods=["GET"]),
        Route("/metrics", guarded("metrics", "admin", metrics), methods=["GET"]),
        *extra_routes,
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(watch_models(service))]
        if start_worker:
            service.worker = WorkerSupervisor(config, storage)
            service.worker.start()
            tasks.append(asyncio.create_task(supervise(service.worker)))
        tasks.append(asyncio.create_task(watch_keys(service)))
        stop_pickup = service.start_pickup()
        started = time.monotonic()
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            stop_pickup()
            sync_keys(service)
            with contextlib.suppress(StorageUnavailable):  # an outage: it has its line
                storage.set_state("explored_rounds", service.explorer.round)
            if service.worker is not None:
                service.worker.stop()
            version = 0 if service.served is None else service.served.version
            decisions = service.metrics.decisions
            feedback = sum(service.metrics.feedbacks.get(o, 0) for o in ("joined", "late"))
            seconds = time.monotonic() - started
            stopped_by = stop_signal(app)
            log_event(server.log_format, "stop",
                      stop_message(version, decisions, feedback, seconds, stopped_by),
                      version=version, decisions=decisions, feedback=feedback,
                      seconds=seconds, signal=stopped_by)

    app = ServiceApp(routes=routes, lifespan=lifespan,
                     exception_handlers={HTTPException: http_error, Exception: internal_error})
    app.router.redirect_slashes = False  # /v1/decide/ is no endpoint: 404, not a redirect
    app.hot = hot
    app.cors_origins = frozenset(origin.lower() for origin in server.cors_origins)
    app.state.body_timeout_seconds = server.body_timeout_seconds
    return app


def stop_signal(app: Starlette) -> str | None:
    """The name of the first signal that stopped the uvicorn server :func:`serve` runs
    ``app`` in (``SIGTERM``, ``SIGINT``, ``SIGHUP``), or None (none caught, or not run by
    :func:`serve`)."""
    import signal

    caught = getattr(app.state, "stop_signals", None) or []
    return signal.Signals(caught[0]).name if caught else None


def write_log(service: Service, since: float | None, until: float | None, fmt: str
              ) -> bytes | None:
    """The joined interactions decided in [since, until) as a log file in ``fmt`` (the
    formats of :mod:`iglearn.data.formats`), or None when there are none."""
    from iglearn.data.formats import write_table
    from iglearn.data.logs import InteractionLog

    data = service.storage.joined(since, until)
    if not len(data):
        return None
    log = InteractionLog(data.context, data.action, data.probability, data.feedback,
                         service.config.model.n_actions, definitely_bad=data.definitely_bad,
                         source="the service's log")
    with tempfile.TemporaryDirectory(prefix="iglearn-log-") as tmp:
        path = Path(tmp) / f"log.{fmt}"
        write_table(log, path)
        if fmt == "parquet":
            add_bookkeeping(path, data)
        return path.read_bytes()


def add_bookkeeping(path: Path, data: Interactions) -> None:
    """The Parquet log ``path`` with each interaction's ``event_id``, ``decided_at`` (Unix
    seconds) and ``model_version`` beside its fields, to join it to an application's own
    records; iglearn's readers read the fields and leave these columns alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for name, values in (("event_id", pa.array(data.event_id, pa.string())),
                         ("decided_at", pa.array(data.decided_at, pa.float64())),
                         ("model_version", pa.array(data.model_version, pa.int64()))):
        table = table.append_column(name, values)
    pq.write_table(table, path)


async def watch_models(service: Service) -> None:
    """Save the explorer's round now and then, and apply the retention setting (new model
    versions are swapped in by the pickup thread, :meth:`Service.pickup`)."""
    poll = service.config.learning.pickup_seconds
    retention = service.config.server.retention_days
    last_retention = 0.0

    def save() -> None:  # in a thread: the database may take a while to answer
        nonlocal last_retention
        service.storage.set_state("explored_rounds", service.explorer.round)
        if retention > 0 and time.monotonic() - last_retention > RETENTION_SECONDS:
            last_retention = time.monotonic()
            service.storage.delete_before(time.time() - retention * 86400)

    while True:
        await asyncio.sleep(poll)
        try:
            await anyio.to_thread.run_sync(save)
        except StorageUnavailable:  # the outage has its own line; the next turn tries again
            pass
        except Exception as e:  # the next turn tries again; say why
            log_error(service.config.server.log_format, "cannot save the service's state", e)


async def supervise(worker: WorkerSupervisor) -> None:
    """Look every :data:`~iglearn.service.supervisor.CHECK_SECONDS` whether the learning
    worker runs, and restart it when it died (:meth:`WorkerSupervisor.check`)."""
    while True:
        await asyncio.sleep(CHECK_SECONDS)
        try:
            worker.check()
        except Exception as e:  # keep supervising; say why
            log_error(worker.config.server.log_format, "cannot supervise the learning worker",
                      e)


LISTEN_BACKLOG = 2048
"""Connections the listening socket queues before the server accepts them (uvicorn's
``backlog``)."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (0: a free port) and listening, for the
    service to serve on; a port in use, or an address that is not this machine's, is an error
    naming it and the fix. It listens at once, so that a client that connects as soon as the
    start line names the address waits in the queue until the server accepts, where before
    the server ran it was refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            problem = ("the port is in use by another program; choose another with --port "
                       "or [server] port")
        elif e.errno == errno.EADDRNOTAVAIL:
            problem = (f"{host} is not an address of this machine; choose another with "
                       f"--host or [server] host")
        elif e.errno == errno.EACCES:
            problem = "permission denied; choose a port above 1023 with --port or [server] port"
        else:
            problem = f"{e.strerror or e}; check [server] host and port"
        raise IGLearnError(f"cannot listen on {host}:{port}: {problem}") from None
    return sock


SERVICE_GC_THRESHOLDS = (700, 10, 10)
"""The garbage collector's thresholds in a serving process: Python's defaults, short pauses
(the command line's larger first generation, :data:`iglearn.cli.COMMAND_GC_THRESHOLD`,
would pause a request for each collection of 200,000 objects)."""


def settle_collector() -> None:
    """Before serving: collect once, move every object made so far (the imported modules,
    torch's among them, the loaded model) out of the garbage collector's generations
    (``gc.freeze``), so that no later full collection walks them again, and collect with
    :data:`SERVICE_GC_THRESHOLDS`."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVICE_GC_THRESHOLDS)


def serve(config: ServiceConfig, insecure_no_auth: bool = False, demo: bool = False,
          listening: Callable[[int], None] | None = None) -> None:
    """Run the service until interrupted (with the demo page at ``/demo`` if ``demo``);
    ``listening(port)`` is called once it is past its refusals and holds its port.

    A refused start leaves nothing behind: the port is taken before anything is created,
    a database without iglearn's schema (a new SQLite file, an empty PostgreSQL database)
    is refused for lack of a key before the schema is created, and a database file this
    start created is removed again when the start is refused (a model that cannot be
    loaded)."""
    import uvicorn

    from iglearn.service.http import guarded_protocol
    from iglearn.service.storage import created_or_removed

    check_no_auth(config, insecure_no_auth)
    sock = listening_socket(config.server.host, config.server.port)
    try:
        with created_or_removed(config.db_path):
            service = Service(config, insecure_no_auth)
    except BaseException:
        sock.close()
        raise
    if demo:
        from iglearn.service.demo import demo_routes

        app = build_app(service, extra_routes=demo_routes(service))
    else:
        app = build_app(service)
    host, port = config.server.host, sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    version = service.served.version if service.served else 0
    log_event(config.server.log_format, "start",
              f"{config.model.algorithm}, K = {config.model.n_actions}, model version "
              f"{version}, database {config.db_shown}, listening on http://{shown}:{port}",
              algorithm=config.model.algorithm, n_actions=config.model.n_actions,
              version=version, database=config.db_shown, url=f"http://{shown}:{port}")
    if listening is not None:
        listening(port)
    settle_collector()
    route_server_log(config.server.log_format)
    server = uvicorn.Server(uvicorn.Config(
        app, host=host, port=port, log_level="warning", log_config=None, access_log=False,
        server_header=False, date_header=False, proxy_headers=False, backlog=LISTEN_BACKLOG,
        http=guarded_protocol(config.server.header_timeout_seconds,
                              config.server.max_header_bytes)))
    app.state.stop_signals = getattr(server, "_captured_signals", None)  # uvicorn's own list
    try:
        server.run(sockets=[sock])
    finally:
        service.storage.close()
    if not server.started:
        raise IGLearnError(f"the service on http://{shown}:{port} could not start; see the "
                           f"lines above")
