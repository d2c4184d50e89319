"""The demo: a page at ``/demo`` where a person grounds the learner live with their own
gestures (``iglearn demo``).

Each round the page shows a coloured shape (the context, :func:`context_features`), the
service answers with one of the colour words (the action) through the ordinary decision
path, and the person reacts by drawing a gesture on a canvas: their own private code for
"right" and "wrong", which the service is never told. The stroke, resampled to a fixed
number of points (:func:`stroke_features`), is the feedback vector. The learning worker
re-fits every few interactions on the small log, and the page shows the decoded reward
psi(y) of each gesture under the served model, so the person sees the learner work out
what their gestures mean.

The demo configuration (:func:`demo_tables`) is the one the sample-efficiency benchmark
(``benchmarks/demo_rounds.py``) measures. The page's routes (:func:`demo_routes`) sit
beside the service's API and use the same storage, explorer and learning worker.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iglearn.errors import IGLearnError
from iglearn.service.ids import new_event_id

if TYPE_CHECKING:
    from starlette.routing import Route

    from iglearn.service.app import Service
    from iglearn.service.config import ServiceConfig

COLOURS = ("red", "green", "blue")
"""The colours of the shapes, and the words the learner answers with (its K actions)."""
SHAPES = ("circle", "square", "triangle")
"""The shapes: part of the context, but no rule of the page depends on them."""
STROKE_POINTS = 16
"""A stroke is resampled to this many points along its length."""
FEEDBACK_DIM = 2 * STROKE_POINTS + 2
"""The feedback vector: the resampled points (x, y), its width-to-height balance and its
closure (see :func:`stroke_features`)."""
CONTEXT_DIM = len(COLOURS) + len(SHAPES)
"""The context vector: the colour and the shape, one-hot."""
MAX_STROKE_POINTS = 5000
"""Most points of one stroke the service accepts."""


def demo_tables(seed: int = 0) -> dict[str, dict[str, Any]]:
    """The demo's service configuration, as TOML tables (see
    :mod:`iglearn.service.config`): K = 3 colour words; a re-fit after every interaction
    from the 6th on (a re-fit on the demo's hundred-odd rounds takes a fraction of a
    second); a fit whose indicator stays at or below 0.45 restarts (up to twice), with the
    paper's plain test (``restart_confidence`` 0: on a few dozen gestures the indicator's
    standard error is about 0.1, and a margin of two of them held back every re-fit of a
    hundred rounds); each re-fit reads the gestures afresh (``reference_confidence`` 0);
    epsilon-greedy
    exploration, so that every interaction is learned from, with a share of random words
    that falls from 25 % to 10 % over the first 40 rounds."""
    return {
        "model": {"n_actions": len(COLOURS), "context_dim": CONTEXT_DIM,
                  "feedback_dim": FEEDBACK_DIM, "algorithm": "igl", "seed": seed,
                  "learner": {"max_restarts": 2, "restart_threshold": 0.45,
                              "restart_confidence": 0.0, "reference_confidence": 0.0,
                              "optimisation": {"max_steps": 60, "batch_size": 64,
                                               "weight_decay_scale": 1.0,
                                               "small_log": 0}}},
        "exploration": {"mode": "epsilon", "epsilon": 0.25, "epsilon_final": 0.1,
                        "epsilon_rounds": 40},
        "learning": {"refit_every": 1, "refit_seconds": 5.0, "min_interactions": 6,
                     "poll_seconds": 0.1, "join_window": 3600.0, "keep_versions": 5},
        "server": {"host": "127.0.0.1", "db": "demo.db"}}


DEMO_CONFIG_HEADER = ("# Written by 'iglearn demo', which writes this file again at every start: "
                      "edits are lost.\n# To change the demo's settings, copy it and serve "
                      "the copy: iglearn serve --demo --insecure-no-auth --config COPY\n")
"""The first lines of every ``demo.toml`` iglearn writes: how it knows the file is its own
(and may write it again) rather than a user's."""


def write_demo_config(folder: str | Path, seed: int = 0) -> Path:
    """Write the demo's configuration (:func:`demo_tables`) to ``folder``/demo.toml (the
    folder is created if need be; its database ``demo.db`` is kept between runs). Files in
    the folder that iglearn did not write are never replaced: a ``demo.toml`` without
    iglearn's header (:data:`DEMO_CONFIG_HEADER`), or a ``demo.db`` that is not an iglearn
    database, is refused, before anything is written."""
    from iglearn.files import write_text
    from iglearn.service.process import config_text

    folder = Path(folder)
    config, database = folder / "demo.toml", folder / "demo.db"
    check_own_file(config, lambda path: path.read_bytes().startswith(
        DEMO_CONFIG_HEADER.encode()), "the demo's configuration")
    check_own_file(database, is_service_database, "the demo's database")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise IGLearnError(f"{folder}: cannot create the demo's folder ({e.strerror}); "
                           f"choose another with --folder") from None
    text = DEMO_CONFIG_HEADER + config_text(demo_tables(seed))
    if not (config.is_file() and config.read_text() == text):
        write_text(config, text)
    return config


def check_own_file(path: Path, own: Callable[[Path], bool], what: str) -> None:
    """Refuse to go on when ``path`` exists and is not a file iglearn wrote as ``what``
    (``own`` says whether a regular file is): a link, a folder or another file is a user's,
    which the demo never replaces or changes."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    except OSError as e:
        raise IGLearnError(f"{path}: cannot be read ({e.strerror}); choose another "
                           f"--folder") from None
    try:
        mine = stat.S_ISREG(info.st_mode) and own(path)
    except OSError:
        mine = False
    if not mine:
        raise IGLearnError(f"{path}: exists and is not {what} written by iglearn; iglearn "
                           f"never replaces a file it did not write: choose another --folder, "
                           f"or move the file away")


def is_service_database(path: Path) -> bool:
    """Whether ``path`` is the service's SQLite database (it has iglearn's schema version),
    read without changing it."""
    from iglearn.service.storage import sqlite_schema_version

    return sqlite_schema_version(path) is not None


def check_demo_config(config: ServiceConfig, insecure_no_auth: bool) -> None:
    """Refuse to serve the page with a configuration it cannot play: the page sends no key
    (so --insecure-no-auth, on loopback) and its contexts, words and gestures have fixed
    dimensions."""
    if not insecure_no_auth:
        raise IGLearnError("--demo serves a page that sends no API key: add "
                           "--insecure-no-auth (loopback only), or run 'iglearn demo'")
    wanted = {"n_actions": len(COLOURS), "context_dim": CONTEXT_DIM,
              "feedback_dim": FEEDBACK_DIM}
    for key, value in wanted.items():
        got = getattr(config.model, key)
        if got != value:
            raise IGLearnError(f"{config.path}: [model] {key} is {got}, but the demo page "
                               f"needs {value}; set it, or run 'iglearn demo'")


def context_features(colour: int, shape: int) -> np.ndarray:
    """The context vector of a ``colour`` (index into :data:`COLOURS`) ``shape``
    (index into :data:`SHAPES`): both one-hot, concatenated."""
    x = np.zeros(CONTEXT_DIM, dtype=np.float32)
    x[colour] = 1.0
    x[len(COLOURS) + shape] = 1.0
    return x


def stroke_features(points: np.ndarray) -> np.ndarray:
    """The feedback vector of a stroke: its points (n, 2), in drawing order (several strokes
    joined end to end), resampled to :data:`STROKE_POINTS` points equally spaced along the
    path, centred on their mean and scaled so that the larger extent spans [-1, 1]; then the
    width-to-height balance (w - h) / (w + h) and the closure 1 - 2 |end - start| / (w + h).
    The features do not change with where the stroke is drawn or how large."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    step = np.linalg.norm(np.diff(p, axis=0), axis=1)
    length = np.concatenate([[0.0], np.cumsum(step)])
    if length[-1] <= 0:  # a dot: every point at the same place
        return np.zeros(FEEDBACK_DIM, dtype=np.float32)
    at = np.linspace(0.0, length[-1], STROKE_POINTS)
    resampled = np.stack([np.interp(at, length, p[:, 0]), np.interp(at, length, p[:, 1])], 1)
    low, high = p.min(0), p.max(0)
    width, height = high - low
    scale = max(width, height) / 2
    centred = (resampled - resampled.mean(0)) / scale
    balance = (width - height) / (width + height)
    closure = 1.0 - 2.0 * np.linalg.norm(p[-1] - p[0]) / (width + height)
    return np.concatenate([centred.ravel(), [balance, closure]]).astype(np.float32)


# -- a simulated person, for the benchmark and the tests -----------------------------------------
GESTURES: dict[str, np.ndarray] = {
    "tick": np.array([[0.0, 0.55], [0.35, 1.0], [1.0, 0.0]]),
    "cross": np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]),
    "circle": np.stack([0.5 + 0.5 * np.cos(np.linspace(0, 2 * np.pi, 24)),
                        0.5 + 0.5 * np.sin(np.linspace(0, 2 * np.pi, 24))], 1),
    "zigzag": np.array([[0.0, 0.0], [0.25, 1.0], [0.5, 0.0], [0.75, 1.0], [1.0, 0.0]]),
    "line": np.array([[0.0, 0.5], [1.0, 0.5]]),
}
"""Template strokes (in a unit box, y downwards as on a canvas) a simulated person draws."""


def simulated_stroke(gesture: str, rng: np.random.Generator, size: float = 200.0,
                     points: int = 40) -> np.ndarray:
    """A person's drawing of ``gesture`` (a key of :data:`GESTURES`) on a canvas of
    ``size`` pixels: the template at a random place and scale, turned by up to 15 degrees,
    with its corners moved and every point jittered, kept on the canvas; ``points`` points
    (n, 2) along it."""
    template = GESTURES[gesture]
    corners = template + rng.normal(scale=0.06, size=template.shape)
    angle = np.deg2rad(rng.uniform(-15, 15))
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    corners = (corners - 0.5) @ turn.T
    scale = rng.uniform(0.35, 0.7) * size
    centre = rng.uniform(0.35, 0.65, size=2) * size
    step = np.linalg.norm(np.diff(corners, axis=0), axis=1)
    length = np.concatenate([[0.0], np.cumsum(step)])
    at = np.sort(rng.uniform(0, length[-1], points - 2))
    at = np.concatenate([[0.0], at, [length[-1]]])
    path = np.stack([np.interp(at, length, corners[:, 0]),
                     np.interp(at, length, corners[:, 1])], 1)
    drawn = centre + scale * path + rng.normal(scale=0.01 * size, size=path.shape)
    return np.clip(drawn, 0.02 * size, 0.98 * size)


# -- the page's routes -------------------------------------------------------------------------
def static_file(name: str) -> bytes:
    """A file of the page (``index.html``, ``demo.js``, ``demo.css``), shipped inside the
    package."""
    return resources.files("iglearn.service").joinpath("static", name).read_bytes()


STATIC_TYPES = {"index.html": "text/html; charset=utf-8",
                "demo.js": "text/javascript; charset=utf-8",
                "demo.css": "text/css; charset=utf-8"}


def stroke_points(value: object) -> np.ndarray:
    """The ``stroke`` field: a list of 2 to :data:`MAX_STROKE_POINTS` [x, y] pairs of finite
    numbers (422 naming the field otherwise)."""
    from iglearn.service.app import Rejected

    if not isinstance(value, list) or not 2 <= len(value) <= MAX_STROKE_POINTS:
        raise Rejected(422, f"must be a list of 2 to {MAX_STROKE_POINTS} [x, y] points",
                       "stroke")
    for i, point in enumerate(value):
        if not (isinstance(point, list) and len(point) == 2
                and all(type(v) in (int, float) for v in point)):
            raise Rejected(422, f"point {i} is not a pair of numbers [x, y]", "stroke")
    array = np.asarray(value, dtype=np.float64)
    if not np.isfinite(array).all() or np.abs(array).max() > 1e6:
        raise Rejected(422, "the points must be finite numbers within ±1e6", "stroke")
    return array


def choice(value: object, name: str, options: tuple[str, ...]) -> int:
    """An index into ``options`` (422 naming ``name`` otherwise)."""
    from iglearn.service.app import Rejected

    if type(value) is not int or not 0 <= value < len(options):
        raise Rejected(422, f"must be an index in [0, {len(options)})", name)
    return value


def demo_routes(service: Service) -> list[Route]:
    """The page and its small API, to serve beside the service's (``build_app``'s
    ``extra_routes``): ``GET /demo`` (the page and its files), ``GET /demo/api/status`` (which
    also swaps in a version the last re-fit stored, so that the page waiting for it need not
    wait for the next pickup),
    ``POST /demo/api/decide`` {colour, shape} (decided as ``/v1/decide`` decides),
    ``POST /demo/api/feedback`` {event_id, stroke} (stored as ``/v1/feedback`` stores
    feedback; answers the gesture's decoded reward) and ``POST /demo/api/reset`` (forget
    everything and start again). The API needs a client key (reset: an admin key) unless the
    service runs without keys."""
    import anyio
    from starlette.requests import Request
    from starlette.responses import RedirectResponse, Response
    from starlette.routing import Route

    from iglearn.service.app import (
        Handler,
        Rejected,
        decision_id,
        endpoint,
        json_response,
        read_json,
    )
    from iglearn.service.learning import due
    from iglearn.service.storage import Feedback, FeedbackOutcome

    limit = service.config.server.max_body_bytes

    def guarded(role: str | None, handler: Handler, page: bool = False) -> Handler:
        return endpoint(service, "demo", role, handler, None if page else ())


    def unserved(last: dict[str, Any]) -> bool:
        """Whether the last re-fit (``last``, the storage's ``last_refit``) stored a version
        to serve that this process does not serve yet."""
        served = service.served
        return (not last.get("held_back")
                and int(last.get("version") or 0) > (0 if served is None else served.version))

    def status(last: dict[str, Any] | None = None) -> dict[str, Any]:
        served = service.served
        version = 0 if served is None else served.version
        counts = service.storage.counts()
        if last is None:
            last = service.storage.state("last_refit") or {}
        pending = (due(service.storage, service.config, time.time()) is not None
                   or service.storage.state("refit_running") is not None or unserved(last))
        return {"model_version": version,
                "interactions": counts.joined, "learnable": counts.learnable,
                "last_refit": last, "refit_pending": pending,
                "refit_every": service.config.learning.refit_every,
                "min_interactions": service.config.learning.min_interactions,
                "colours": list(COLOURS), "shapes": list(SHAPES)}

    async def page(request: Request) -> Response:
        name = request.path_params.get("name", "index.html")
        if name not in STATIC_TYPES:
            raise Rejected(404, f"no file {name!r} in the demo; its files are "
                                f"{', '.join(STATIC_TYPES)}", "path")
        return Response(static_file(name), media_type=STATIC_TYPES[name],
                        headers={"cache-control": "no-cache"})

    async def get_status(request: Request) -> Response:
        last = service.storage.state("last_refit") or {}
        if unserved(last):  # the page waits for it: swap it in now, as a re-fit request does
            await anyio.to_thread.run_sync(service.load_served)
        return json_response(status(last))

    async def decide(request: Request) -> Response:
        body = await read_json(request, limit, ("colour", "shape"))
        colour = choice(body.get("colour"), "colour", COLOURS)
        shape = choice(body.get("shape"), "shape", SHAPES)
        context = context_features(colour, shape)[None]
        allowed = np.ones((1, len(COLOURS)), dtype=bool)
        decision = service.decide(context, [new_event_id()], allowed)[0]
        return json_response({"event_id": decision.event_id, "action": decision.action,
                              "word": COLOURS[decision.action],
                              "probability": decision.probability,
                              "probabilities": decision.probabilities.tolist(),
                              "model_version": decision.model_version,
                              "explored": decision.explored})

    async def feedback(request: Request) -> Response:
        body = await read_json(request, limit, ("event_id", "stroke"))
        eid = decision_id(body, service.config.server.event_id_max_length)
        if "stroke" not in body:
            raise Rejected(422, "missing", "stroke")
        y = stroke_features(stroke_points(body["stroke"]))
        outcome = service.add_feedback([Feedback(eid, y, False, time.time())])[0]
        if outcome is FeedbackOutcome.UNKNOWN:
            raise Rejected(404, f"no decision has event id {eid}", "event_id")
        if outcome is FeedbackOutcome.DUPLICATE:
            raise Rejected(409, f"event {eid} already has its feedback", "event_id")
        served = service.served
        reward = None if served is None else float(served.learner.decode(y[None])[0])
        return json_response({"outcome": outcome.value, "decoded_reward": reward,
                              "decoded_by": 0 if served is None else served.version,
                              "feedback": y.tolist(), **status()})

    async def reset(request: Request) -> Response:
        await read_json(request, limit, (), empty_ok=True)
        await restart(service)
        return json_response(status())

    async def redirect(request: Request) -> Response:
        # keep the query: /demo?seed=3 is the page's seeded shapes, as /demo/?seed=3
        query = request.url.query
        return RedirectResponse("/demo/" + (f"?{query}" if query else ""), 307)

    return [Route("/demo", guarded(None, redirect, page=True), methods=["GET"]),
            Route("/demo/", guarded(None, page, page=True), methods=["GET"]),
            Route("/demo/{name}", guarded(None, page, page=True), methods=["GET"]),
            Route("/demo/api/status", guarded("client", get_status), methods=["GET"]),
            Route("/demo/api/decide", guarded("client", decide), methods=["POST"]),
            Route("/demo/api/feedback", guarded("client", feedback), methods=["POST"]),
            Route("/demo/api/reset", guarded("admin", reset), methods=["POST"])]


async def restart(service: Service) -> None:
    """Forget everything: stop the learning worker (a fit under way is lost), clear the
    storage's interactions, models and state (its keys stay), serve no model, begin the
    exploration schedule again and start a fresh worker."""
    import anyio

    from iglearn.service.exploration import Explorer

    worker = service.worker
    if worker is not None:
        await anyio.to_thread.run_sync(worker.stop)
    service.storage.clear()
    service.served = None
    config = service.config
    service.explorer = Explorer(config.exploration, config.model.n_actions, 0,
                                config.exploration.make_rng(0))
    if worker is not None:
        worker.start()
