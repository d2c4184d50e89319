"""Limits on what iglearn accepts from files and logs, checked before memory is allocated.

Each limit is a module-level setting read when a file is read, so a program may change it,
e.g. ``iglearn.data.limits.MAX_ACTIONS = 10**7``; every message about a limit names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from iglearn.errors import IGLearnError, TooFewInteractionsError

if TYPE_CHECKING:
    from iglearn.data.logs import InteractionLog
    from iglearn.data.stream import LogStream

MAX_ACTIONS = 1_000_000
"""Most actions K a log, a context set or a model may have (a linear policy holds K x d_x
weights)."""

MAX_DIM = 1_000_000
"""Most context or feedback dimensions d_x, d_y a file or a model may have."""

MAX_HIDDEN = 1_000_000
"""Most hidden units a saved MLP policy or decoder may have."""

MAX_EXPANSION = 10_000
"""Most bytes of arrays a file may decode to per byte it holds (data file plus feature
schema). Deflate (compressed ``.npz``) cannot expand data more than 1032 times and files
iglearn writes stay below 600 (a Parquet log of constant columns); a file that claims more
rows or dimensions than this is damaged or hostile."""

MAX_JSON_BYTES = 64 * 2**20
"""Largest JSON text read: a ``model.json``, a DSJSON feature schema, one DSJSON line, the
feature schema in Parquet or ``.npz`` metadata."""

MAX_JSON_DEPTH = 64
"""Deepest nesting of objects and lists in that JSON (DSJSON lines need 5)."""

MAX_INTEGER_DIGITS = 20
"""Most digits of an integer in JSON (an int64 has at most 19)."""

MAX_ABS_VALUE = 1e9
"""Largest magnitude of a context or feedback value. Beyond it, products and squares of such
values with importance weights up to 1 / PROBABILITY_FLOOR leave float32's range (3.4e38) in
the optimiser's state; values are checked as logged, before any standardisation, so such a
column must be shifted or rescaled first (:data:`TOO_LARGE_FIX`)."""

TOO_LARGE_FIX = ("subtract an origin or change the unit (a time stamp: seconds since the log "
                 "began), leave it out, or raise iglearn.data.limits.MAX_ABS_VALUE")
"""What a message about a value beyond :data:`MAX_ABS_VALUE` tells the user to do: the
commonest such columns are time stamps (Unix seconds pass 1.7e9) and running counters."""

PROBABILITY_FLOOR = 1e-6
"""Smallest logged probability accepted. 1/p is the importance weight of an interaction: one
logged with p = 1e-30 outweighs every other interaction in every estimate by a factor of
10**24, and its gradients overflow float32. Lower the floor for logs whose logging policy
really did play some actions this rarely."""

MIN_PER_ACTION = 2
"""The fewest interactions per action, on average, that a log must hold to be fitted: a log
of n interactions with K actions is refused when n < MIN_PER_ACTION * K."""


def check_log_types(logs: Sequence[object]) -> None:
    """Refuse what a fit was given in place of a log (an :class:`~iglearn.data.logs.
    InteractionLog` or a :class:`~iglearn.data.stream.LogStream`), saying how to make one of
    it: a DataFrame, a file name, arrays (a scikit-learn habit: ``fit(X, y)``)."""
    from pathlib import Path

    from iglearn.data.frames import is_table
    from iglearn.data.logs import InteractionLog
    from iglearn.data.stream import LogStream

    for log in logs:
        if isinstance(log, InteractionLog | LogStream):
            continue
        if is_table(log):  # pandas or polars (a DataFrame), pyarrow (a Table)
            how = (f"a {type(log).__name__}: read it with iglearn.InteractionLog.from_frame("
                   f"frame, context=..., action=..., probability=..., feedback=...)")
        elif isinstance(log, str | Path):
            how = (f"a file name ({str(log)!r}): read it with iglearn.open_log(path) (iglearn's "
                   f"layout) or InteractionLog.from_frame(pandas.read_csv(path), context=..., "
                   f"...) (your own column names)")
        else:
            how = (f"a value of type {type(log).__name__}: an IGL fit reads logged "
                   f"interactions (context, action, probability, feedback), not contexts and "
                   f"labels; make one with iglearn.InteractionLog(context, action, "
                   f"probability, feedback, n_actions)")
        raise IGLearnError(f"fit takes an interaction log, not {how}")


def check_fit_size(logs: Sequence[InteractionLog | LogStream]) -> None:
    """Refuse what is not a log (:func:`check_log_types`), then logs too small to fit (logs
    in memory or streamed): fewer than :data:`MIN_PER_ACTION` interactions per action (so also
    fewer interactions than actions). Every learner's fit checks here first, and
    ``iglearn fit`` before it builds the learner."""
    check_log_types(logs)
    for log in logs:
        n, k = len(log), log.n_actions
        minimum = MIN_PER_ACTION * k
        if n < minimum:
            raise TooFewInteractionsError(
                f"{log.source}: {n} interaction{'' if n == 1 else 's'} for {k} actions is too "
                f"few to fit; a fit needs at least {minimum} ({MIN_PER_ACTION} per action): "
                f"log more interactions", n, k, minimum)


def check_feedback_varies(logs: Sequence[InteractionLog | LogStream]) -> None:
    """Refuse a log in memory whose feedback vector is the same in every interaction: an IGL
    learner reads the reward from how the feedback varies, and such a log has nothing to
    decode (a feedback column lost in a join, a logger that wrote its default). The learners
    that read the feedback (2021 IGL, AI-IGL, IGL-P, VI-IGL) check here when they fit
    (:func:`check_igl_logs`); a streamed log is not read for it."""
    for log in logs:
        feedback = getattr(log, "feedback", None)
        if feedback is None or len(feedback) < 2:
            continue
        first = feedback[0]
        if not any((feedback[i:i + 4096] != first).any() for i in range(0, len(feedback), 4096)):
            raise IGLearnError(
                f"{log.source}: the feedback is the same in all {len(feedback)} interactions; "
                f"an IGL learner decodes the reward from how the feedback varies: check how "
                f"the feedback was logged")


def check_igl_logs(logs: Sequence[InteractionLog | LogStream]) -> None:
    """The checks of a fit that decodes the reward from the feedback (2021 IGL, AI-IGL,
    IGL-P, VI-IGL): :func:`check_fit_size`, then :func:`check_feedback_varies`."""
    check_fit_size(logs)
    check_feedback_varies(logs)
