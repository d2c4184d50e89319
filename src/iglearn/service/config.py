"""The decision service's configuration: one TOML file, read into the dataclasses below and
validated before the service starts.

Each table of the file is one dataclass (``[model]``: :class:`ModelSettings`,
``[exploration]``: :class:`ExplorationSettings`, ``[learning]``: :class:`LearningSettings`,
``[server]``: :class:`ServerSettings`); each key is a field, documented by the field's
docstring. Only ``[model]``'s ``n_actions``, ``context_dim`` and ``feedback_dim`` are
required. A problem (an unknown table or key, a value of the wrong type or range) is one
:class:`~iglearn.errors.IGLearnError` line naming the file, the key and the fix.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from iglearn.data import limits, safejson
from iglearn.errors import IGLearnError, shown
from iglearn.files import input_file
from iglearn.learners.schedules import SCHEDULES, Schedule, make_schedule
from iglearn.learners.settings import DECODER_KINDS, POLICY_KINDS
from iglearn.service.operator_log import LOG_FORMATS
from iglearn.threads import MAX_THREADS

EXPLORATION_MODES = ("e2g", "epsilon")
EXPLOIT_MODES = ("greedy", "softmax")
SYNCHRONOUS = ("normal", "full")
MAX_CONFIG_BYTES = 1_000_000


def algorithms() -> tuple[str, ...]:
    """The learners the service can run, by name: those a model folder can hold
    (:func:`iglearn.learners.registry.learners`, the one registry of algorithms)."""
    from iglearn.learners.registry import learners

    return tuple(learners())


@dataclass(frozen=True)
class ModelSettings:
    """``[model]``: the decision problem and the learner."""

    n_actions: int
    """K, the number of actions (at least 2)."""
    context_dim: int
    """Dimension of a context vector."""
    feedback_dim: int
    """Dimension of a feedback vector."""
    algorithm: str = "igl"
    """The learner: 'igl' (BatchIGL, feedback that depends on the reward alone) or 'ai-igl'
    (AIIGL, feedback that may depend on the action too)."""
    policy: str = "linear"
    """Policy class: 'linear' or 'mlp'."""
    decoder: str = "linear"
    """Reward decoder class: 'linear' or 'mlp' (IGL and AI-IGL; IGL-P has no decoder, and its
    inverse-kinematics model's class is ``[model.learner] model``)."""
    seed: int = 0
    """Seed of the service's random draws and of every re-fit."""
    actions: tuple[str, ...] | None = None
    """The actions' names, in the order of their indices (n_actions of them): each decision
    then gives its action's name (``action_name``) beside its index, and a decision's allowed
    ``actions`` may be named (none: actions are indices only)."""
    context_names: tuple[str, ...] | None = None
    """The names of the context vector's entries, in order (context_dim of them; the column
    names of the table a model was fitted on offline): an imported model fitted on named
    columns in another order, or on other names, is refused (it would read each value as
    another feature); none: a model's names are not checked."""
    feedback_names: tuple[str, ...] | None = None
    """The names of the feedback vector's entries, in order (feedback_dim of them; the
    column names of the table a model was fitted on offline): a feedback may then be sent as
    a JSON object of its values by name, messages name its entries, and an imported model
    fitted on named feedback columns in another order, or on other names, is refused; none:
    feedback is a list, and a model's names are not checked."""
    learner: dict[str, Any] = field(default_factory=dict)
    """More constructor settings of the learner (``[model.learner]``: any setting ``iglearn
    fit`` takes, e.g. ``max_restarts = 2`` or ``optimisation = {epochs = 4}``)."""


@dataclass(frozen=True)
class ExplorationSettings:
    """``[exploration]``: how decisions explore. Every served action's exact probability is
    logged with it."""

    mode: str = "e2g"
    """'e2g': Algorithm 1's epoch-greedy schedule (each round one uniformly random action,
    then n_i steps of the policy; re-fits learn from the uniform steps only); 'epsilon': with
    probability ``epsilon`` a uniformly random action, else the policy's (re-fits learn from
    every interaction, importance-weighted)."""
    schedule: str = "paper"
    """E2G's schedule {n_i}: 'paper' (``warmup`` uniform rounds), 'theory' (Theorem 2) or
    'data-driven' (until a fit certifies its decoder)."""
    warmup: int = 1000
    """Uniform rounds before the 'paper' schedule starts exploiting."""
    iota: float = 100.0
    """The schedule's complexity term: round i exploits floor(sqrt(i / (K iota))) steps."""
    eta: float = 0.7
    """Assumption 2's eta, for the 'theory' schedule."""
    exploit: str = "greedy"
    """How the policy plays: 'greedy' (its argmax, probability 1 under E2G) or 'softmax'
    (a draw from pi(.|x))."""
    epsilon: float = 0.1
    """The 'epsilon' mode's share of uniformly random actions, in (0, 1]."""
    epsilon_rounds: int = 0
    """Decisions over which the share of random actions falls linearly from ``epsilon`` to
    ``epsilon_final`` (0: no decay, it stays ``epsilon``)."""
    epsilon_final: float = 0.0
    """With ``epsilon_rounds``: the share of random actions after the decay, in
    (0, epsilon]."""
    seed: int | None = None
    """Seed of the exploration's random draws; none: a fresh seed at every start. With a
    seed the draws are reproducible: a service started on an empty database with the same
    seed, the same model and the same requests draws the same actions. Replicas sharing one
    database should each have their own seed (or none), or they draw alike."""

    def make_rng(self, start: int) -> np.random.Generator:
        """The exploration's random generator for a service starting after ``start`` earlier
        decisions (or rounds): from ``seed`` and ``start`` when a seed is set, else from the
        clock."""
        entropy = time.time_ns() if self.seed is None else self.seed
        return np.random.default_rng(np.random.SeedSequence([entropy, start]))

    def epsilon_at(self, decisions: np.ndarray) -> np.ndarray:
        """The 'epsilon' mode's share of random actions for decisions after ``decisions``
        earlier ones (the linear decay from ``epsilon`` to ``epsilon_final``)."""
        decisions = np.asarray(decisions, dtype=np.float64)
        if self.epsilon_rounds <= 0:
            return np.full(decisions.shape, self.epsilon)
        done = np.minimum(decisions / self.epsilon_rounds, 1.0)
        return self.epsilon + done * (self.epsilon_final - self.epsilon)

    def make_schedule(self) -> Schedule:
        """E2G's schedule object."""
        return make_schedule(self.schedule, warmup=self.warmup, eta=self.eta, iota=self.iota)


@dataclass(frozen=True)
class LearningSettings:
    """``[learning]``: when the background worker re-fits, and which feedback it uses."""

    refit_every: int = 500
    """Re-fit after this many new joined interactions it can learn from."""
    refit_seconds: float = 300.0
    """Re-fit at least this often (seconds) while new interactions keep arriving."""
    min_interactions: int = 200
    """No fit before this many joined interactions it can learn from."""
    max_interactions: int = 100_000
    """A re-fit learns from at most this many of the latest joined interactions."""
    join_window: float = 600.0
    """Seconds after a decision within which its feedback is learned from; later feedback
    is stored, marked late, and not learned from."""
    keep_versions: int = 20
    """Model versions kept for rollback (the served one is always kept)."""
    worker_threads: int = 1
    """Torch, BLAS and OpenMP threads of the re-fitting worker process (1 to 1024)."""
    worker_nice: int = 10
    """How much lower the worker's CPU priority is than the service's (0 to 19), so that
    decisions come first on a busy machine."""
    poll_seconds: float = 0.5
    """How often the worker looks for work (and, not holding the re-fit lease, tries to
    take it); 0.05 to 3600 seconds."""
    pickup_seconds: float = 1.0
    """Every service process (every replica) serves a newly stored model version within
    this many seconds, plus the time to load it: a thread of each, with a database
    connection of its own, polls the database's served version this often, apart from the
    requests' event loop, so that no load on the service delays it; 0.05 to 3600 seconds
    (below 0.05 an idle service spends its time polling)."""
    serve_unidentified: bool = False
    """Serve every re-fit. By default a re-fit whose indicator is not above the learner's
    restart threshold (its fit did not identify the feedback's meaning: the learner warns
    ``IdentifiabilityWarning``), nor above the served model's indicator on the same
    interactions, is stored but not served: the current model keeps serving
    (before the first identified fit, the exploration of the warm-up), and the re-fit's
    summary, ``last_refit`` and the operator's log say why (``held_back``)."""


@dataclass(frozen=True)
class ServerSettings:
    """``[server]``: where the service listens and stores."""

    host: str = "127.0.0.1"
    """Address to listen on."""
    port: int = 8700
    """TCP port to listen on."""
    db: str = "service.db"
    """SQLite database file, relative to the configuration file's folder; or a PostgreSQL
    URL, postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE, which several replicas share
    (needs pip install -e '.[postgres]')."""
    pool_size: int = 4
    """PostgreSQL only: most connections each service process keeps open for requests (its
    learning worker and its model pickup thread have one each of their own)."""
    synchronous: str = "normal"
    """SQLite's synchronous mode: 'normal' (every commit survives a crash of the service;
    WAL) or 'full' (also a power cut, slower)."""
    max_body_bytes: int = 1_000_000
    """Largest request body accepted (413 above; PUT /v1/model takes 64 times as much, at
    most 1 GiB, streamed to a temporary file)."""
    max_batch: int = 1000
    """Most contexts in one batch decision."""
    retention_days: float = 0.0
    """Delete interactions older than this many days (0: keep everything)."""
    event_id_max_length: int = 128
    """Longest event id accepted."""
    torch_threads: int = 1
    """Torch, BLAS and OpenMP threads of the service process (its decisions are small
    products; 1 to 1024)."""
    body_timeout_seconds: float = 10.0
    """Longest time a request's body may take to arrive (at most 3600 seconds): a body that
    stalls is answered 408 and its connection closed, so that slow or stalled clients
    cannot hold the service's connections. (A body over ``max_body_bytes`` is read and
    dropped for at most this long, so that the client, still sending, receives the 413.)"""
    header_timeout_seconds: float = 10.0
    """Longest time a request's head (its request line and headers) may take to arrive (at
    most 3600 seconds): a connection that has not delivered one by then is closed (408 when
    a request had begun), so that a client sending its headers slowly, or none, cannot
    hold the service's connections."""
    max_header_bytes: int = 65536
    """Largest request head (request line and headers) accepted: 431 above, and the
    connection closed."""
    log_format: str = "text"
    """The operator's log on standard error (start, re-fits, swaps of the served version,
    rollbacks): 'text' for a terminal, or 'json' (one object per line) for log
    collectors; ``iglearn serve --log-format`` overrides it."""
    cors_origins: tuple[str, ...] = ()
    """The web origins whose pages may call the service from a browser (CORS), each
    ``scheme://host[:port]`` with scheme http or https and no path
    (``["https://app.example.com", "http://localhost:3000"]``), or ``["*"]`` for any origin:
    a preflight (``OPTIONS`` with ``Access-Control-Request-Method``) from one is answered 204
    without a key, every answer to one carries ``Access-Control-Allow-Origin``, and a
    preflight from another origin is answered 403; empty (the default): no CORS, and a page
    on another origin cannot call the service."""


@dataclass(frozen=True)
class ServiceConfig:
    """The whole configuration, and where it was read from."""

    model: ModelSettings
    exploration: ExplorationSettings = field(default_factory=ExplorationSettings)
    learning: LearningSettings = field(default_factory=LearningSettings)
    server: ServerSettings = field(default_factory=ServerSettings)
    path: str = ""
    """The configuration file (relative paths in it are relative to its folder)."""

    @property
    def db_path(self) -> Path | str:
        """The database file, resolved against the configuration file's folder, or the
        PostgreSQL URL as given."""
        from iglearn.service.storage import is_postgres

        if is_postgres(self.server.db):
            return self.server.db
        return self.resolved(self.server.db)

    def resolved(self, value: str | Path) -> Path:
        """A path the file gives (``[server] db``, ``[model.learner] logdir``): as it is when
        absolute (``~`` expanded), else relative to the configuration file's folder."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else Path(self.path).resolve().parent / path

    @property
    def db_shown(self) -> str:
        """The database, for messages (a URL's password hidden)."""
        db = self.db_path
        if not isinstance(db, str):  # a file
            return str(db)
        from iglearn.service.postgres import shown_url  # (imports psycopg)

        return shown_url(db)

    def learner_settings(self) -> dict[str, Any]:
        """The constructor settings of the learner (but its seed): the model classes it has
        (IGL-P has no decoder) and ``[model.learner]``."""
        from iglearn.learners.registry import learner_class

        names = {f.name for f in dataclasses.fields(learner_class(self.model.algorithm))}
        classes = {"policy": self.model.policy, "decoder": self.model.decoder}
        return {k: v for k, v in classes.items() if k in names} | self.model.learner

    def replace(self, **server: Any) -> ServiceConfig:
        """This configuration with some ``[server]`` keys overridden (from the command line);
        the new values are validated like the file's."""
        given = {k: v for k, v in server.items() if v is not None}
        if not given:
            return self
        values = dataclasses.asdict(self.server) | given
        settings = _section(ServerSettings, "server", values, self.path)
        _check_server(settings, self.path)
        return dataclasses.replace(self, server=settings)


POLL_SECONDS = (0.05, 3600.0)
"""The range of ``[learning] poll_seconds`` and ``pickup_seconds``: each is a loop that asks
the database, and below 0.05 s an idle service spends its time asking."""
MAX_SECONDS = 1e9
"""Longest ``[learning] refit_seconds`` and ``join_window`` (about 31 years)."""
RANGES: dict[tuple[str, str], tuple[float, float]] = {
    ("learning", "poll_seconds"): POLL_SECONDS, ("learning", "pickup_seconds"): POLL_SECONDS,
    ("learning", "refit_seconds"): (0.0, MAX_SECONDS),
    ("learning", "join_window"): (0.0, MAX_SECONDS),
    ("learning", "worker_threads"): (1, MAX_THREADS),
    ("server", "torch_threads"): (1, MAX_THREADS),
    ("server", "retention_days"): (0.0, MAX_SECONDS / 86400),
    ("server", "body_timeout_seconds"): (0.0, 3600.0),
    ("server", "header_timeout_seconds"): (0.0, 3600.0),
}
"""The bounds of the numeric settings that have an upper one (the others: :func:`_check`)."""

TABLES: dict[str, type] = {"model": ModelSettings, "exploration": ExplorationSettings,
                           "learning": LearningSettings, "server": ServerSettings}


def load_config(path: str | Path, learner: bool = True) -> ServiceConfig:
    """Read and validate the TOML configuration at ``path``; ``learner``: build the
    configured learner to check ``[model.learner]`` (False: for the commands that use the
    database only, ``serve keys`` and ``serve db upgrade``, which then import no learner and
    no torch)."""
    path = Path(path)
    size = input_file(path, "configuration file")
    if size > MAX_CONFIG_BYTES:
        raise IGLearnError(f"{path}: {size} bytes is too large for a configuration file "
                           f"(at most {MAX_CONFIG_BYTES})")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark, as Notepad saves
    except UnicodeDecodeError as e:
        raise IGLearnError(f"{path}: not valid TOML ({e}); fix the file") from None
    return parse_config(safejson.parse_toml(text, str(path), "fix the file"), str(path),
                        learner)


def parse_config(document: dict[str, Any], path: str = "configuration",
                 learner: bool = True) -> ServiceConfig:
    """The configuration in a parsed TOML ``document``, validated (``learner``: the learner's
    settings too, :func:`load_config`); ``path`` names it in errors."""
    unknown = sorted(set(document) - set(TABLES))
    if unknown:
        raise IGLearnError(f"{path}: unknown table [{unknown[0]}]; the tables are "
                           f"{', '.join(f'[{t}]' for t in TABLES)}")
    if "model" not in document:
        raise IGLearnError(f"{path}: the [model] table is missing; it needs n_actions, "
                           f"context_dim and feedback_dim")
    sections = {}
    for name, cls in TABLES.items():
        values = document.get(name, {})
        if not isinstance(values, dict):
            raise IGLearnError(f"{path}: {name} must be a table [{name}], got {shown(values)}")
        sections[name] = _section(cls, name, values, path)
    config = ServiceConfig(**sections, path=str(path))
    _check(config, path, learner)
    return config


def _section(cls: type, name: str, values: dict[str, Any], path: str) -> Any:
    """The dataclass ``cls`` from a table's ``values``, each checked against its field's
    type as every typed settings document is (:func:`iglearn.cli.settings.typed_value`:
    the type, finite numbers >= 0); the ranges are :func:`_check`'s."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in values:
        if key not in fields:
            raise IGLearnError(f"{path}: unknown key {shown(key)} in [{name}]; the keys are "
                               f"{', '.join(fields)}")
    missing = [key for key, f in fields.items() if key not in values
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise IGLearnError(f"{path}: [{name}] needs {missing[0]} (an integer); add it")
    from iglearn.cli.settings import SettingRefused, typed_value

    converted = {}
    for key, value in values.items():
        try:
            converted[key] = typed_value(cls, key, value)
        except SettingRefused as e:
            shape = name == "model" and key in SHAPE_RANGES
            expected = (_range_text(key) if shape else INTEGER_RANGES[name, key]
                        if (name, key) in INTEGER_RANGES else _positive_text(cls, key)
                        if key in POSITIVE.get(name, ()) else f"a list of {CORS_FORM}"
                        if (name, key) == ("server", "cors_origins") else e.expected)
            raise _bad(path, name, key, value, expected) from None
    return cls(**converted)


CORS_FORM = ('origins, each scheme://host[:port] with scheme http or https and no path '
             '(["https://app.example.com", "http://localhost:3000"]), or ["*"] alone for '
             'any origin')
"""What ``[server] cors_origins`` takes (:func:`origin_problem`)."""
DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_problem(origin: str) -> str | None:
    """Why ``origin`` is not a web origin as a browser sends it in its ``Origin`` header
    (``scheme://host[:port]``, scheme http or https, no path, no default port), or None."""
    parts = urlsplit(origin)
    if parts.scheme.lower() not in DEFAULT_PORTS:
        return "its scheme is not http or https"
    try:
        port = parts.port
    except ValueError:
        return "its port is not a number in [0, 65535]"
    if not parts.hostname or "@" in parts.netloc:
        return "it has no host, or a user before its host"
    if origin != f"{parts.scheme}://{parts.netloc}":
        return "it has a path, a query or a fragment"
    if port == DEFAULT_PORTS[parts.scheme.lower()]:
        return f"a browser sends it without its default port {port}"
    return None


INTEGER_RANGES = {("server", "port"): "an integer in [0, 65535]",
                  ("learning", "worker_nice"): "an integer in [0, 19]"}
"""What the integer settings with a range of their own need, told alike for a value of
another type (a port given as text) and one out of the range (:func:`_check`)."""
SHAPE_RANGES = {"n_actions": (2, limits.MAX_ACTIONS), "context_dim": (1, limits.MAX_DIM),
                 "feedback_dim": (1, limits.MAX_DIM)}
"""The range of each of [model]'s shape settings (told alike for a wrong type or value),
which every stored interaction and model version of a service's database share."""


POSITIVE = {"exploration": ("warmup", "iota"),
            "learning": ("refit_every", "refit_seconds", "min_interactions",
                         "max_interactions", "join_window", "keep_versions", "worker_threads",
                         "poll_seconds", "pickup_seconds"),
            "server": ("max_body_bytes", "max_header_bytes", "max_batch",
                       "event_id_max_length", "pool_size", "body_timeout_seconds",
                       "header_timeout_seconds")}
"""The settings, table by table, that must be above 0 (told alike for a wrong type or
value: :func:`_positive_text`)."""


def _positive_text(cls: type, key: str) -> str:
    """What a setting of :data:`POSITIVE` expects: an integer >= 1, or a finite number > 0."""
    kind = {f.name: f.type for f in dataclasses.fields(cls)}[key]
    return "an integer >= 1" if kind in (int, "int") else "a finite number > 0"


def _range_text(key: str) -> str:
    low, high = SHAPE_RANGES[key]
    return f"an integer in [{low}, {high}]"


def _bad(path: str, table: str, key: str, value: object, expected: str) -> IGLearnError:
    return IGLearnError(f"{path}: [{table}] {key} is {shown(value)}; expected {expected}")


def _check(config: ServiceConfig, path: str, learner: bool = True) -> None:
    """The ranges and choices of every setting, and (``learner``) the learner's own
    settings."""
    m, e, lr = config.model, config.exploration, config.learning
    for key, (low, high) in SHAPE_RANGES.items():
        value = getattr(m, key)
        if not low <= value <= high:
            raise _bad(path, "model", key, value, _range_text(key))
    choices = {("model", "algorithm"): algorithms(), ("model", "policy"): POLICY_KINDS,
               ("model", "decoder"): DECODER_KINDS,
               ("exploration", "mode"): EXPLORATION_MODES,
               ("exploration", "schedule"): SCHEDULES,
               ("exploration", "exploit"): EXPLOIT_MODES,
               ("server", "synchronous"): SYNCHRONOUS}
    for (table, key), options in choices.items():
        value = getattr(getattr(config, table), key)
        if value not in options:
            raise _bad(path, table, key, value, f"one of {', '.join(options)}")
    if m.seed < 0:
        raise _bad(path, "model", "seed", m.seed, "an integer >= 0")
    if m.actions is not None and (len(m.actions) != m.n_actions or not all(m.actions)
                                  or len(set(m.actions)) != len(m.actions)):
        raise _bad(path, "model", "actions", list(m.actions),
                   f"{m.n_actions} distinct names, one per action (n_actions)")
    for kind, dim in (("context", m.context_dim), ("feedback", m.feedback_dim)):
        names = getattr(m, f"{kind}_names")
        if names is not None and (len(names) != dim or not all(names)
                                  or len(set(names)) != len(names)):
            raise _bad(path, "model", f"{kind}_names", list(names),
                       f"{dim} distinct names, one per {kind} entry ({kind}_dim)")
    if e.seed is not None and e.seed < 0:
        raise _bad(path, "exploration", "seed", e.seed, "an integer >= 0")
    if not 0 < e.epsilon <= 1:
        raise _bad(path, "exploration", "epsilon", e.epsilon, "a number in (0, 1]")
    if e.epsilon_rounds < 0:
        raise _bad(path, "exploration", "epsilon_rounds", e.epsilon_rounds, "an integer >= 0")
    if e.epsilon_rounds > 0 and not 0 < e.epsilon_final <= e.epsilon:
        raise _bad(path, "exploration", "epsilon_final", e.epsilon_final,
                   f"a number in (0, epsilon = {e.epsilon:g}] when epsilon_rounds is set")
    for table, keys in POSITIVE.items():
        section = getattr(config, table)
        for key in keys:
            if not getattr(section, key) > 0:
                raise _bad(path, table, key, getattr(section, key),
                           _positive_text(type(section), key))
    _check_ranges(config.learning, "learning", path)
    if not 0 <= lr.worker_nice <= 19:
        raise _bad(path, "learning", "worker_nice", lr.worker_nice,
                   INTEGER_RANGES["learning", "worker_nice"])
    if not 0 < e.eta <= 1:
        raise _bad(path, "exploration", "eta", e.eta, "a number in (0, 1] (Assumption 2)")
    if lr.min_interactions > lr.max_interactions:
        raise _bad(path, "learning", "min_interactions", lr.min_interactions,
                   f"at most max_interactions ({lr.max_interactions})")
    _check_server(config.server, path)
    if learner:
        make_learner(config, path)


def _check_ranges(settings: Any, table: str, path: str) -> None:
    """The bounds of :data:`RANGES` for the settings of ``table``."""
    for (where, key), (low, high) in RANGES.items():
        if where == table and not low <= getattr(settings, key) <= high:
            raise _bad(path, table, key, getattr(settings, key),
                       f"a number in [{low:g}, {high:g}]")


def _check_server(s: ServerSettings, path: str) -> None:
    _check_ranges(s, "server", path)
    if not 0 <= s.port <= 65535:
        raise _bad(path, "server", "port", s.port, INTEGER_RANGES["server", "port"])
    if not s.host:
        raise _bad(path, "server", "host", s.host, "an address such as 127.0.0.1")
    if not s.db:
        raise _bad(path, "server", "db", s.db, "a file name such as service.db")
    from iglearn.service.storage import is_postgres

    if is_postgres(s.db):  # (the URL helpers' module imports psycopg)
        from iglearn.service.postgres import URL_FORM, shown_url, url_problem

        problem = url_problem(s.db)
        if problem is not None:
            raise IGLearnError(f"{path}: [server] db {shown(shown_url(s.db))} is not a "
                               f"PostgreSQL URL ({problem}); write it as {URL_FORM}")
    if s.synchronous not in SYNCHRONOUS:
        raise _bad(path, "server", "synchronous", s.synchronous,
                   f"one of {', '.join(SYNCHRONOUS)}")
    if s.log_format not in LOG_FORMATS:
        raise _bad(path, "server", "log_format", s.log_format, "text or json")
    for origin in s.cors_origins:
        problem = ('"*" (any origin) goes alone, not beside other origins'
                   if origin == "*" and len(s.cors_origins) > 1
                   else None if origin == "*" else origin_problem(origin))
        if problem is not None:
            raise IGLearnError(f"{path}: [server] cors_origins has {shown(origin)}, which "
                               f"is not an origin it takes ({problem}); give {CORS_FORM}")


def make_learner(config: ServiceConfig, path: str = "configuration", seed: int = 0) -> Any:
    """A new, unfitted learner of the configured algorithm and settings (the registry's
    learner class with its defaults, ``[model.learner]`` in their place as ``iglearn fit``'s
    options are: a table such as ``optimisation = {epochs = 4}`` changes those keys of the
    algorithm's own defaults); every value is checked against its setting's type
    (:func:`iglearn.cli.settings.typed_settings`) and a bad one names its key."""
    from iglearn.cli.settings import SettingRefused, typed_settings
    from iglearn.learners.registry import learner_class

    cls = learner_class(config.model.algorithm)
    settings = config.learner_settings()
    for key in settings:
        if key == "seed":
            raise IGLearnError(f"{path}: [model.learner] seed: set [model] seed instead")
        if key == "threads":
            raise IGLearnError(f"{path}: [model.learner] threads: set [learning] "
                               f"worker_threads instead")
    if "threads" in {f.name for f in dataclasses.fields(cls)}:  # re-fits run in the worker
        settings["threads"] = config.learning.worker_threads
    if isinstance(settings.get("logdir"), str) and settings["logdir"]:  # as [server] db is
        settings["logdir"] = str(config.resolved(settings["logdir"]))
    try:
        learner = typed_settings(cls(seed=seed), settings, skip=("seed", "threads"))
    except SettingRefused as e:
        raise IGLearnError(f"{path}: [model.learner] {e}") from None
    except (TypeError, ValueError, IGLearnError) as e:
        raise IGLearnError(f"{path}: [model.learner] settings refused by "
                           f"{cls.__name__}: {e}; fix them") from None
    device = getattr(learner, "device", None)
    if isinstance(device, str):  # a device this machine lacks: refused now, not at each re-fit
        from iglearn.devices import resolve_device

        try:
            resolve_device(device)
        except IGLearnError as e:
            raise IGLearnError(f"{path}: [model.learner] {e}") from None
    return learner


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1 or localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
