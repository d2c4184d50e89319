"""A Python client of the decision service (``iglearn serve``).

    client = Client("http://127.0.0.1:8700", api_key)
    decision = client.decide(context)            # {"event_id", "action", "probability", ...}
    client.feedback(decision["event_id"], feedback_vector)

Every decision carries an event id chosen by the client before the first attempt, so a
request retried after a lost answer or a connection error is idempotent: the service returns
the decision it stored the first time, and a feedback retried after it was stored is
answered 409, which the client takes as done.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from iglearn.errors import IGLearnError, require_extra
from iglearn.service.ids import new_event_id

require_extra("serve", ("httpx",), "iglearn.client")
import httpx  # noqa: E402

RETRY_STATUSES = frozenset({500, 502, 503, 504})


class ServiceError(IGLearnError):
    """The service answered with an error status; ``status`` and ``field`` say which."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(f"HTTP {status}: {message}" + (f" (field {field})" if field else ""))
        self.status, self.field = status, field


def _actions(actions: Sequence[int | str]) -> list[int | str]:
    """The allowed actions as the service reads them: indices as integers, names as text."""
    return [a if isinstance(a, str) else int(a) for a in actions]


def _numbers(values: Any, field: str) -> list[float]:
    """``values`` as a flat list of finite numbers for the JSON body; ``field`` names them in
    the error raised, before anything is sent, for a value that is not a finite number."""
    given = np.asarray(values, dtype=object).ravel()
    text = [i for i, value in enumerate(given) if isinstance(value, str | bytes)]
    if text:  # the service refuses text; told here, before anything is sent
        raise IGLearnError(f"{field}[{text[0]}] is text ({given[text[0]]!r}); the service takes "
                           f"numbers: convert the values (float(...)) before sending")
    try:
        array = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError) as e:
        raise IGLearnError(f"{field}: not a vector of numbers ({e}); send a sequence of "
                           f"numbers") from None
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
        value = array[bad[0]]
        what = "NaN" if np.isnan(value) else f"infinite ({value})"
        raise IGLearnError(f"{field}[{bad[0]}] is {what}; the service takes finite numbers "
                           f"only: replace or drop it before sending")
    return array.tolist()


class Client:
    """Talks to a decision service.

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8700``.
        api_key: a key from ``iglearn serve keys add`` (None for a service run with
            ``--insecure-no-auth``).
        timeout: seconds to wait for each answer.
        retries: further attempts after a connection error, a timeout or a 5xx answer.
        backoff: seconds before the first retry, doubled for each further one.
    """

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 10.0,
                 retries: int = 3, backoff: float = 0.1):
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)
        self.retries, self.backoff = retries, backoff

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, json: Any = None, retried_ok: int | None = None
                 ) -> httpx.Response:
        """Send, retrying; ``retried_ok``: a status that counts as success on a retry."""
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(method, path, json=json)
            except httpx.TransportError as e:
                if attempt == self.retries:
                    raise IGLearnError(
                        f"{self._http.base_url}{path}: cannot reach the decision service "
                        f"after {attempt + 1} attempt{'s' if attempt else ''} "
                        f"({type(e).__name__}: {e}); check that it is running and the "
                        f"URL and port") from e
            else:
                if response.status_code < 400:
                    return response
                if attempt > 0 and response.status_code == retried_ok:
                    return response
                if response.status_code not in RETRY_STATUSES or attempt == self.retries:
                    _raise(response)
            time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def decide(self, context: Sequence[float] | np.ndarray, event_id: str | None = None,
               actions: Sequence[int | str] | None = None) -> dict[str, Any]:
        """A decision for one context: event_id, action, probability, probabilities,
        model_version, explored. ``actions`` restricts it to some actions (indices, or the
        names of the service's ``[model] actions``)."""
        body: dict[str, Any] = {"context": _numbers(context, "context"),
                                "event_id": event_id or new_event_id()}
        if actions is not None:
            body["actions"] = _actions(actions)
        return self._request("POST", "/v1/decide", body).json()

    def decide_batch(self, contexts: np.ndarray | Sequence[Sequence[float]],
                     event_ids: Sequence[str] | None = None,
                     actions: Sequence[int | str] | None = None) -> list[dict[str, Any]]:
        """Decisions for many contexts in one request, one context a row; ``actions``
        restricts every one of them to some actions, as :meth:`decide`'s does."""
        if np.ndim(contexts) < 2 and not (isinstance(contexts, Sequence) and len(contexts)
                                          and isinstance(contexts[0], Sequence | np.ndarray)):
            raise IGLearnError(f"contexts: one vector (shape {np.shape(contexts)}); "
                               f"decide_batch takes one context a row (a 2-D array or a list "
                               f"of vectors); decide takes a single context")
        rows = [_numbers(c, f"contexts[{i}]") for i, c in enumerate(contexts)]
        ids = list(event_ids) if event_ids is not None else [new_event_id() for _ in rows]
        body: dict[str, Any] = {"contexts": rows, "event_ids": ids}
        if actions is not None:
            body["actions"] = _actions(actions)
        return self._request("POST", "/v1/decide", body).json()["decisions"]

    def feedback(self, event_id: str, feedback: Sequence[float] | np.ndarray,
                 definitely_bad: bool = False) -> str:
        """Send the feedback vector of a decision; 'joined', 'late' or, when a retry found
        it already stored, 'stored'."""
        response = self._request("POST", "/v1/feedback",
                                 {"event_id": event_id,
                                  "feedback": _numbers(feedback, "feedback"),
                                  "definitely_bad": definitely_bad}, retried_ok=409)
        if response.status_code == 409:
            return "stored"
        return response.headers.get("iglearn-feedback", "joined")

    def model(self) -> dict[str, Any]:
        """The served model's description (GET /v1/model)."""
        return self._request("GET", "/v1/model").json()

    def refit(self, wait: float = 0.0) -> dict[str, Any]:
        """Ask for a re-fit (admin); with ``wait``, wait up to that many seconds for it."""
        return self._request("POST", f"/v1/model/refit?wait={wait}").json()


def _raise(response: httpx.Response) -> None:
    try:
        body = response.json()
        message, field = body.get("error", response.text), body.get("field")
    except ValueError:
        message, field = response.text, None
    raise ServiceError(response.status_code, message, field)
