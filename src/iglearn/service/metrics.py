"""The service's metrics in Prometheus' text exposition format (``GET /metrics``): decisions
(and the idempotent retries answered with a stored one), feedback by outcome and the join
rate, request latency histograms by endpoint, the served model's version and indicator, the
newest stored version and how long the served one has been behind it, and the re-fits'
durations. Counters are this process's since it started; the model figures come from the
storage."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from typing import Any

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
"""Upper bounds (seconds) of the latency histogram's buckets."""


class Metrics:
    """Counters and latency histograms of one service process."""

    def __init__(self) -> None:
        self.decisions = 0
        self.explored = 0
        self.retries = 0
        self.feedbacks: dict[str, int] = defaultdict(int)
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.buckets: dict[str, list[int]] = {}
        self.sums: dict[str, float] = defaultdict(float)

    def decided(self, n: int, explored: int) -> None:
        """Count ``n`` decisions stored anew, ``explored`` of them exploring."""
        self.decisions += n
        self.explored += explored

    def retried(self, n: int) -> None:
        """Count ``n`` decisions answered with the one stored before under their event id
        (idempotent retries, not counted as decisions); a decision refused because its
        event id is stored with another context or action (409) is not one."""
        self.retries += n

    def feedback(self, outcome: str) -> None:
        """Count one feedback by its outcome (joined, late, unknown, duplicate)."""
        self.feedbacks[outcome] += 1

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        """Count one request and its latency."""
        self.requests[(endpoint, status)] += 1
        counts = self.buckets.setdefault(endpoint, [0] * (len(BUCKETS) + 1))
        counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.sums[endpoint] += seconds

    def render(self, served: Any, models: list[Any],
               versions: tuple[int, int, float]) -> str:
        """Every metric as Prometheus text; ``versions``: the served version, the newest
        stored one and the seconds since the newest was stored while another is served."""
        lines: list[str] = []

        def metric(name: str, kind: str, doc: str, samples: list[tuple[str, float]]) -> None:
            lines.extend([f"# HELP {name} {doc}", f"# TYPE {name} {kind}"])
            lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)

        metric("iglearn_decisions_total", "counter",
               "Decisions made and stored (a retry answered with its stored decision is "
               "counted in iglearn_decision_retries_total instead).", [("", self.decisions)])
        metric("iglearn_decision_retries_total", "counter",
               "Decisions asked again under a stored event id (idempotent retries), answered "
               "with the stored decision and not counted as decisions (a request refused "
               "409, another context or action under a stored event id, is not counted).",
               [("", self.retries)])
        metric("iglearn_decisions_explored_total", "counter", "Decisions that explored.",
               [("", self.explored)])
        metric("iglearn_feedback_total", "counter", "Feedback received, by outcome.",
               [(f'{{outcome="{o}"}}', self.feedbacks.get(o, 0))
                for o in ("joined", "late", "unknown", "duplicate")])
        joined = self.feedbacks.get("joined", 0)
        metric("iglearn_feedback_join_rate", "gauge",
               "Share of decisions whose feedback joined within the window.",
               [("", joined / self.decisions if self.decisions else 0.0)])
        metric("iglearn_late_feedback_total", "counter",
               "Feedback after the join window (stored, not learned from).",
               [("", self.feedbacks.get("late", 0))])
        metric("iglearn_requests_total", "counter", "Requests, by endpoint and status.",
               [(f'{{endpoint="{e}",status="{s}"}}', n)
                for (e, s), n in sorted(self.requests.items())])
        lines.extend(["# HELP iglearn_request_seconds Request latency, by endpoint.",
                      "# TYPE iglearn_request_seconds histogram"])
        for endpoint, counts in sorted(self.buckets.items()):
            total = 0
            for bound, count in zip([*BUCKETS, math.inf], counts, strict=True):
                total += count
                le = "+Inf" if bound == math.inf else repr(bound)
                lines.append(f'iglearn_request_seconds_bucket{{endpoint="{endpoint}",'
                             f'le="{le}"}} {total}')
            lines.append(f'iglearn_request_seconds_sum{{endpoint="{endpoint}"}} '
                         f'{_number(self.sums[endpoint])}')
            lines.append(f'iglearn_request_seconds_count{{endpoint="{endpoint}"}} {total}')
        indicator = None if served is None else served.record.summary.get("indicator")
        metric("iglearn_model_version", "gauge", "The served model version (0: none yet).",
               [("", 0 if served is None else served.version)])
        metric("iglearn_model_newest_version", "gauge",
               "The newest stored model version to serve (not held back; 0: none yet).",
               [("", versions[1])])
        metric("iglearn_model_behind_seconds", "gauge",
               "Seconds since the newest stored version was stored while this process "
               "serves another (0 when it serves the newest; a rollback counts).",
               [("", float(versions[2]))])
        metric("iglearn_model_indicator", "gauge",
               "The served model's indicator (Eq. 9; NaN before a fit).",
               [("", math.nan if indicator is None else indicator)])
        fits = [m.fit_seconds for m in models if m.summary.get("source") == "refit"]
        metric("iglearn_refit_seconds", "summary", "Durations of the stored re-fits.",
               [("_count", len(fits)), ("_sum", sum(fits))])
        metric("iglearn_refit_last_seconds", "gauge", "Duration of the latest stored re-fit.",
               [("", fits[-1] if fits else math.nan)])
        return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(value) if isinstance(value, float) else str(value)
