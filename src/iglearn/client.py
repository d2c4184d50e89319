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

import contextlib
import operator
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from iglearn.errors import IGLearnError, require_extra, shown
from iglearn.service.ids import new_event_id

require_extra("serve", ("httpx",), "iglearn.client")
import httpx  # noqa: E402

RETRY_STATUSES = frozenset({500, 502, 503, 504})
LOG10_2 = 0.30103
"""log10(2): an integer of n bits is about 10**(n * LOG10_2)."""


class ServiceError(IGLearnError):
    """The service answered with an error status; ``status`` and ``field`` say which."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(f"HTTP {status}: {message}" + (f" (field {field})" if field else ""))
        self.status, self.field = status, field


def _actions(actions: Sequence[int | str]) -> list[int | str]:
    """The allowed actions as the service reads them: indices as integers (a whole number of
    any type: 2, 2.0, numpy's integers), names as text; anything else an
    :class:`IGLearnError` naming it (1.7 is no action index: it was sent as 1)."""
    out: list[int | str] = []
    for i, a in enumerate(actions):
        if isinstance(a, str):
            out.append(a)
            continue
        if not isinstance(a, bool | np.bool_):
            try:
                out.append(operator.index(a))  # int, numpy's integers
                continue
            except TypeError:
                pass
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                if float(a).is_integer():  # 2.0, np.float32(2)
                    out.append(int(a))
                    continue
        raise IGLearnError(f"actions[{i}] is {shown(a)}, not an action index (a whole number) "
                           f"nor an action's name; pass the actions' indices as integers "
                           f"(or their names)")
    return out


ONE_CONTEXT = ("decide takes one context, a flat vector of numbers: pass the row itself, or "
               "call decide_batch for rows of contexts")
"""What a nested context given to :meth:`Client.decide` is told to do."""
ONE_ROW = "each row of decide_batch is one context, a flat vector of numbers"
"""What a nested row given to :meth:`Client.decide_batch` is told to do."""
ONE_VECTOR = "send a sequence of numbers"
"""What any other nested vector is told to do."""


def _shape(values: Any) -> str:
    """``values``' shape as numpy reads it, for a message ("ragged" when rows differ)."""
    try:
        return str(np.shape(values))
    except ValueError:  # rows of different lengths
        return "ragged"


def _items(values: Any) -> list[Any]:
    """The top-level entries of ``values`` (a scalar or a text: itself, as one entry)."""
    if isinstance(values, np.ndarray):
        return list(values) if values.ndim else [values.item()]
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        return [values]
    return list(values)


def _numbers(values: Any, field: str, nested: str = ONE_VECTOR,
             names: Sequence[str] | None = None) -> list[float]:
    """``values`` as a flat list of finite numbers for the JSON body; ``field`` names them in
    the error raised, before anything is sent, for a value that is not a finite number (entry
    i as ``field[i]``, or with ``names`` as ``field['name']``), and ``nested`` says what to
    send instead of a vector of vectors."""
    def at(i: int) -> str:
        return f"{field}[{i if names is None else repr(names[i])}]"

    def complex_number(where: str, what: str) -> IGLearnError:
        return IGLearnError(f"{where} is complex: {what}; the service takes real numbers: "
                            f"send the real part (.real) or the magnitude (abs) instead")

    if isinstance(values, np.ndarray) and values.dtype.kind == "c":  # float() drops .imag
        raise complex_number(field, f"dtype {values.dtype}")
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":  # numbers only
        if values.ndim > 1:
            raise IGLearnError(f"{field}: not a vector of numbers (shape {values.shape}: "
                               f"{field}[0] is itself {values.shape[1]} values); {nested}")
        array = values.astype(np.float64).ravel()
    else:
        items = _items(values)
        for i, value in enumerate(items):
            if isinstance(value, str | bytes):  # the service refuses text: told here
                raise IGLearnError(f"{at(i)} is text ({value!r}); the service takes "
                                   f"numbers: convert the values (float(...)) before sending")
            if value is None:
                raise IGLearnError(f"{at(i)} is None, not a number; the service takes "
                                   f"finite numbers only: replace or drop it before sending")
            try:
                inner = np.ndim(value)
            except ValueError:  # itself ragged
                inner = 1
            if inner:
                raise IGLearnError(f"{field}: not a vector of numbers ({at(i)} is itself "
                                   f"a sequence, shape {_shape(value)}); {nested}")
            if isinstance(value, complex | np.complexfloating):
                raise complex_number(at(i), shown(value))
            try:
                float(value)
            except (TypeError, ValueError):
                raise IGLearnError(f"{at(i)} is not a number ({type(value).__name__} "
                                   f"{value!r}); the service takes finite numbers only: "
                                   f"convert or drop it before sending") from None
            except OverflowError:  # an int beyond a float's range, 10**400
                what = (f"an integer of about 10**{int(abs(value).bit_length() * LOG10_2)}"
                        if isinstance(value, int) else shown(value))
                raise IGLearnError(f"{at(i)} is too large for a float ({what}); the service "
                                   f"takes finite numbers only, at most about 1.8e308: scale "
                                   f"or drop it before sending") from None
        array = np.asarray(items, dtype=np.float64).ravel()
    bad = np.flatnonzero(~np.isfinite(array))
    if len(bad):
        value = array[bad[0]]
        what = "NaN" if np.isnan(value) else f"infinite ({value})"
        raise IGLearnError(f"{at(int(bad[0]))} is {what}; the service takes finite numbers "
                           f"only: replace or drop it before sending")
    return array.tolist()


def _named(values: Mapping, field: str) -> dict[str, float]:
    """A context or a feedback by name (a mapping of the service's ``[model] context_names``
    or ``feedback_names`` to numbers) for the JSON body, its values checked as
    :func:`_numbers` checks a vector's; the service checks the names."""
    names = list(values)
    odd = next((name for name in names if not isinstance(name, str)), None)
    if odd is not None:
        kind = "feedback" if field.startswith("feedback") else "context"
        raise IGLearnError(f"{field}: the name {odd!r} is not text; a {kind} by name maps "
                           f"the service's [model] {kind}_names to numbers")
    numbers = _numbers([values[name] for name in names], field, ONE_VECTOR, names)
    return dict(zip(names, numbers, strict=True))


def _vector(values: Any, field: str, nested: str = ONE_VECTOR
            ) -> list[float] | dict[str, float]:
    """One context or feedback for the JSON body: a vector (:func:`_numbers`), or a mapping
    by name (:func:`_named`)."""
    if isinstance(values, Mapping):
        return _named(values, field)
    return _numbers(values, field, nested)


def _rows(contexts: Any) -> list[list[float] | dict[str, float]]:
    """The rows of ``decide_batch``'s ``contexts`` as lists of finite numbers, all of the
    same length (the first row's), or an :class:`IGLearnError` naming the row at fault."""
    if not isinstance(contexts, np.ndarray | Sequence):  # a data frame, a tensor
        with contextlib.suppress(TypeError, ValueError):
            contexts = np.asarray(contexts)
    if isinstance(contexts, np.ndarray):
        rows = list(contexts) if contexts.ndim >= 2 else []
    else:
        rows = _items(contexts) if isinstance(contexts, Sequence) else []
        first = rows[0] if rows else None
        if isinstance(first, str | bytes) or not np.iterable(first):
            rows = []
    if not rows:
        shape = _shape(contexts)
        if shape.startswith("(0,"):
            raise IGLearnError(f"contexts: no rows (shape {shape}); decide_batch takes one "
                               f"context a row, at least one")
        raise IGLearnError(f"contexts: one vector (shape {shape}); decide_batch takes one "
                           f"context a row (a 2-D array or a list of vectors); decide takes "
                           f"a single context")
    numbers = [_vector(c, f"contexts[{i}]", ONE_ROW) for i, c in enumerate(rows)]
    width = len(numbers[0])
    for i, row in enumerate(numbers):
        if isinstance(row, list) and len(row) != width:
            raise IGLearnError(f"contexts[{i}] has {len(row)} values but contexts[0] has "
                               f"{width}; every row of decide_batch is one context of the "
                               f"same length: fix or drop row {i}")
    return numbers


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

    def _request(self, method: str, path: str, json: Any = None, retried_ok: int | None = None,
                 timeout: float | None = None, content: bytes | None = None,
                 headers: dict[str, str] | None = None, repeatable: bool = True,
                 what: str = "the request") -> httpx.Response:
        """Send, retrying; ``retried_ok``: a status that counts as success on a retry;
        ``timeout``: this request's seconds to wait for its answer (default the client's).
        A request that is not ``repeatable`` (an import stores a new version each time) is
        sent again only after a connection that was never made, never after a 5xx answer,
        and an answer lost after it was sent is an error saying that ``what`` may have been
        done."""
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(method, path, json=json, content=content,
                                              headers=headers, **extra)
            except httpx.TransportError as e:
                if not repeatable and not isinstance(e, httpx.ConnectError):
                    raise IGLearnError(
                        f"{self._http.base_url}{path}: the connection failed during "
                        f"{what} ({type(e).__name__}: {e}); the service may have done it: "
                        f"check the served version (GET /v1/model) before sending it "
                        f"again") from e
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
                if (response.status_code not in RETRY_STATUSES or attempt == self.retries
                        or not repeatable):
                    _raise(response)
            time.sleep(self.backoff * 2**attempt)
        raise AssertionError("unreachable")

    def decide(self, context: Sequence[float] | np.ndarray | Mapping[str, float],
               event_id: str | None = None,
               actions: Sequence[int | str] | None = None) -> dict[str, Any]:
        """A decision for one context: event_id, action, probability, probabilities,
        model_version, explored. The context is a vector, or a mapping of the service's
        ``[model] context_names`` to their values (``{"age": 31, ...}``, in any order).
        ``actions`` restricts it to some actions (indices, or the names of the service's
        ``[model] actions``)."""
        body: dict[str, Any] = {"context": _vector(context, "context", ONE_CONTEXT),
                                "event_id": event_id or new_event_id()}
        if actions is not None:
            body["actions"] = _actions(actions)
        return self._request("POST", "/v1/decide", body).json()

    def decide_batch(self, contexts: np.ndarray | Sequence[Sequence[float]]
                     | Sequence[Mapping[str, float]],
                     event_ids: Sequence[str] | None = None,
                     actions: Sequence[int | str] | None = None) -> list[dict[str, Any]]:
        """Decisions for many contexts in one request, one context a row (a vector, or a
        mapping by name as :meth:`decide` takes); ``actions`` restricts every one of them to
        some actions, as :meth:`decide`'s does."""
        rows = _rows(contexts)
        ids = list(event_ids) if event_ids is not None else [new_event_id() for _ in rows]
        body: dict[str, Any] = {"contexts": rows, "event_ids": ids}
        if actions is not None:
            body["actions"] = _actions(actions)
        return self._request("POST", "/v1/decide", body).json()["decisions"]

    def feedback(self, event_id: str,
                 feedback: Sequence[float] | np.ndarray | Mapping[str, float],
                 definitely_bad: bool = False) -> str:
        """Send the feedback vector of a decision (or a mapping of the service's ``[model]
        feedback_names`` to their values); 'joined', 'late' or, when a retry found it
        already stored, 'stored'. ``definitely_bad`` is a bool (Python's or numpy's)."""
        if not isinstance(definitely_bad, bool | np.bool_):
            raise IGLearnError(f"definitely_bad is {shown(definitely_bad)}, not a bool; pass "
                               f"True or False")
        response = self._request("POST", "/v1/feedback",
                                 {"event_id": event_id,
                                  "feedback": _vector(feedback, "feedback"),
                                  "definitely_bad": bool(definitely_bad)}, retried_ok=409)
        if response.status_code == 409:
            return "stored"
        return response.headers.get("iglearn-feedback", "joined")

    def model(self) -> dict[str, Any]:
        """The served model's description (GET /v1/model)."""
        return self._request("GET", "/v1/model").json()

    def refit(self, wait: float = 0.0) -> dict[str, Any]:
        """Ask for a re-fit (admin); with ``wait``, wait up to that many seconds for it (the
        request's own timeout is the client's plus ``wait``, so that a long wait is not cut
        short and sent again as further re-fit requests)."""
        timeout = self._http.timeout.read
        return self._request("POST", f"/v1/model/refit?wait={wait}",
                             timeout=None if not wait else (timeout or 10.0) + float(wait)
                             ).json()

    def health(self) -> dict[str, Any]:
        """The service's health (GET /healthz, no key needed): ``status`` (``"ok"``, or
        ``"degraded"`` with a ``problem`` while its learning worker is dead), ``iglearn`` (its
        version) and ``model_version`` (the served version, 0 before the first)."""
        return self._request("GET", "/healthz").json()

    def export_model(self) -> tuple[int, bytes]:
        """The served model (admin; GET /v1/model/export): its version and its archive (a
        ``.tar.gz`` that :func:`iglearn.models.archive.read_model` and ``iglearn load`` read).
        A service that has no model yet answers 404 (:class:`ServiceError`)."""
        response = self._request("GET", "/v1/model/export")
        name = response.headers.get("content-disposition", "")
        found = re.search(r"iglearn-model-v(\d+)\.tar\.gz", name)
        return (int(found.group(1)) if found else 0), response.content

    def import_model(self, model: bytes | str | Path) -> dict[str, Any]:
        """Store a model as the service's next version and serve it at once (admin; PUT
        /v1/model); the served model's description, as :meth:`model` gives it.

        ``model`` is an archive's bytes, the path of an archive (``.tar.gz`` or ``.tgz``, as
        :meth:`export_model` and ``iglearn pack`` give it) or the path of a model folder
        (``iglearn fit``'s ``--out``, packed with :func:`iglearn.models.archive.pack_model`).
        The service checks it as ``load_model`` does, and against its K, dimensions and
        algorithm (else 422, :class:`ServiceError`). An import is not idempotent, so it is
        sent again only after a connection that was never made; an answer lost after the
        upload raises an :class:`IGLearnError` that says so (see :meth:`model` for whether
        the version was stored)."""
        if isinstance(model, str | Path):
            from iglearn.models.archive import MAX_ARCHIVE_BYTES, is_archive, pack_model

            if is_archive(model):
                from iglearn.files import input_file

                if input_file(model, "model archive") > MAX_ARCHIVE_BYTES:
                    raise IGLearnError(f"{model}: more than {MAX_ARCHIVE_BYTES} bytes "
                                       f"(iglearn.models.archive.MAX_ARCHIVE_BYTES); it is "
                                       f"not an iglearn model archive")
                data = Path(model).read_bytes()
            else:
                data = pack_model(model)
        else:
            data = bytes(model)
        return self._request("PUT", "/v1/model", content=data,
                             headers={"content-type": "application/gzip"}, repeatable=False,
                             what="the import").json()


def _raise(response: httpx.Response) -> None:
    try:
        body = response.json()
        message, field = body.get("error", response.text), body.get("field")
    except ValueError:
        message, field = response.text, None
    raise ServiceError(response.status_code, message, field)
