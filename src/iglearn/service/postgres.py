"""The decision service's storage on PostgreSQL, which several service replicas share.

:class:`PostgresStorage` implements :class:`~iglearn.service.storage.Storage` with psycopg 3
and a psycopg_pool connection pool (``pip install -e '.[postgres]'``). Every replica
writes its decisions and feedback into one table, so feedback may reach a replica other than
the one that decided; an event id is unique across all of them (a retry at any replica gets
the stored decision back, and a second feedback is refused whichever replica it reaches).

The schema is versioned: the table ``iglearn_schema_version`` records every migration
applied (:data:`MIGRATIONS`, in order). A service creates the schema in an empty database; a
database at an older version is migrated by ``iglearn serve db upgrade --config FILE``
(:func:`upgrade`), never behind running replicas' backs, and a newer one is refused.

The re-fit lease is a PostgreSQL advisory lock held on a connection of its own: the server
releases it when that connection ends, which a killed process's connection does at once.

While the server cannot be reached (stopped, restarting, the network down), every use of the
database raises :class:`~iglearn.service.storage.StorageUnavailable` within
:data:`POOL_WAIT_SECONDS` (:data:`UNREACHABLE_WAIT_SECONDS` once an outage is known), and
the outage is reported once in the operator's log
(:data:`~iglearn.service.operator_log.OUTAGE`); the pool connects again by itself once the
server is back.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from iglearn.data import safejson
from iglearn.errors import IGLearnError, require_extra
from iglearn.service.operator_log import OUTAGE
from iglearn.service.storage import (
    KEY_USE_STATE,
    Counts,
    Decision,
    Feedback,
    FeedbackOutcome,
    Interactions,
    KeyRecord,
    ModelRecord,
    Storage,
    StorageUnavailable,
    interactions_from_rows,
    joined_query,
)

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError:  # pragma: no cover - the message below says what to install
    psycopg = None  # type: ignore[assignment]

T = TypeVar("T")

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("the interaction log, model versions, API keys and shared state", """
CREATE TABLE iglearn_state (name text PRIMARY KEY, value text NOT NULL);
CREATE TABLE iglearn_interactions (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text NOT NULL UNIQUE,
    decided_at double precision NOT NULL,
    context bytea NOT NULL,
    action integer NOT NULL,
    probability double precision NOT NULL,
    probabilities bytea NOT NULL,
    model_version integer NOT NULL,
    explored boolean NOT NULL,
    learnable boolean NOT NULL,
    feedback bytea,
    feedback_at double precision,
    definitely_bad boolean,
    late boolean
);
CREATE INDEX iglearn_interactions_joined ON iglearn_interactions (learnable, seq)
    WHERE feedback_at IS NOT NULL AND NOT late;
CREATE INDEX iglearn_interactions_decided ON iglearn_interactions (decided_at);
CREATE TABLE iglearn_models (
    version integer PRIMARY KEY,
    created_at double precision NOT NULL,
    algorithm text NOT NULL,
    interactions integer NOT NULL,
    fit_seconds double precision NOT NULL,
    summary text NOT NULL,
    archive bytea NOT NULL
);
CREATE TABLE iglearn_keys (
    digest text PRIMARY KEY,
    role text NOT NULL,
    created_at double precision NOT NULL
)
"""),
)
"""The schema's migrations, in order: (what it does, its SQL statements). Version ``n`` is
the schema after the first ``n``; a new migration is appended, never edited."""
SCHEMA_VERSION = len(MIGRATIONS)

LOCK_NAMESPACE = 0x1617_1EA2
"""The first key of iglearn's advisory locks (the second names the lock)."""
SCHEMA_LOCK, MODELS_LOCK, REFIT_LEASE = 1, 2, 3
RETRIES = 5
"""Attempts of a transaction that lost a deadlock or serialisation conflict."""
POOL_WAIT_SECONDS = 3.0
"""How long a use of the database waits for a pooled connection before it raises
:class:`~iglearn.service.storage.StorageUnavailable` (a request: 503). Long enough for a
busy pool to hand one over (its commits take milliseconds) and for a new connection to a
distant server to be made; short enough that a client hears of an outage long before its
own timeout (psycopg_pool's default, 30 s, held every request that long while the server
was down)."""
UNREACHABLE_WAIT_SECONDS = 0.5
"""The wait instead of :data:`POOL_WAIT_SECONDS` while the process knows the database is
unreachable (a use failed so, and none has succeeded since): requests fail fast rather
than pile up waiting, and a connection to a server that is back is made well within it."""
RECONNECT_SECONDS = 5.0
"""How long the pool tries to replace a lost connection (after 0, 1, 3 and 5 s) before it
gives up, after which the next use of the database starts again at once. psycopg_pool's
default, 300 s, doubles its wait up to minutes, which a service whose server came back
would spend answering 503."""
PROBE_SECONDS = 1.0
"""How long :meth:`PostgresStorage.probe` (``/readyz``) waits for a connection."""


URL_FORM = "postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


def url_problem(url: str) -> str | None:
    """What makes ``url`` no PostgreSQL URL that libpq could read (its brackets, host, port,
    percent-escapes), or None; checked when the configuration is read, before any
    connection."""
    try:
        parts = urlsplit(url)
        port = parts.port  # a port that is no number in [0, 65535] raises
        host = parts.hostname
    except ValueError as e:
        return str(e)
    if port == 0:
        return "port 0"
    if "[" in parts.netloc and not host:
        return "an empty IPv6 address"
    if parts.fragment:
        return f"a fragment '#{parts.fragment}'"
    stray = re.search(r"%(?![0-9A-Fa-f]{2})", url)
    if stray:
        return f"a '%' at {stray.start()} that starts no %XX escape"
    return None


def shown_url(url: str) -> str:
    """``url`` without its password, for messages (a malformed URL too)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # hide whatever stands between :// and the last @
        return re.sub(r"(://[^:/@]*):.*@", r"\1:***@", url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def _require_driver() -> None:
    if psycopg is None:
        require_extra("postgres", ("psycopg", "psycopg_pool"), "a postgresql:// database")


def _connect(url: str, timeout: float = 10.0) -> Any:
    """One autocommit connection to ``url`` (an IGLearnError saying why not)."""
    _require_driver()
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(timeout)))
    except psycopg.Error as e:
        reason = " ".join(line.strip() for line in str(e).splitlines()) or type(e).__name__
        raise IGLearnError(f"{shown_url(url)}: cannot connect to PostgreSQL ({reason}); "
                           f"check that the server runs and the URL's user, host, port and "
                           f"database") from None


def connection_lost(error: Exception) -> bool:
    """Whether ``error`` says that the server cannot be reached or the connection to it is
    gone (the client's own error, which has no SQL state; a connection exception, class 08;
    the server shutting down, crashed or starting, 57P01 to 57P03), rather than that a
    statement failed."""
    if isinstance(error, PoolTimeout):
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def one_line(error: Exception) -> str:
    """An error's message on one line (libpq's run over several)."""
    return " ".join(line.strip() for line in str(error).splitlines()) or type(error).__name__


def schema_version(connection: Any) -> int:
    """The schema version of the database ``connection`` is on (0: no schema yet)."""
    exists = connection.execute("SELECT to_regclass('iglearn_schema_version')").fetchone()[0]
    if exists is None:
        return 0
    return int(connection.execute("SELECT coalesce(max(version), 0) FROM "
                                  "iglearn_schema_version").fetchone()[0])


def migrate(connection: Any, url: str, upgrade: bool) -> tuple[int, int]:
    """Create the schema in an empty database, or (``upgrade``) apply the migrations an
    older one lacks, in one transaction under the schema lock (replicas starting together
    do it once); (version before, version after)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)",
                           (LOCK_NAMESPACE, SCHEMA_LOCK))
        before = schema_version(connection)
        if before > SCHEMA_VERSION:
            raise IGLearnError(f"{shown_url(url)}: database schema version {before} is newer "
                               f"than this iglearn's ({SCHEMA_VERSION}); upgrade iglearn")
        if 0 < before < SCHEMA_VERSION and not upgrade:
            raise IGLearnError(f"{shown_url(url)}: database schema version {before}, but "
                               f"this iglearn needs {SCHEMA_VERSION}; run 'iglearn serve db "
                               f"upgrade --config FILE' first")
        connection.execute("CREATE TABLE IF NOT EXISTS iglearn_schema_version (version "
                           "integer PRIMARY KEY, applied_at double precision NOT NULL, "
                           "description text NOT NULL)")
        for version in range(before + 1, SCHEMA_VERSION + 1):
            description, sql = MIGRATIONS[version - 1]
            for statement in sql.split(";"):
                if statement.strip():
                    connection.execute(statement)
            connection.execute("INSERT INTO iglearn_schema_version VALUES (%s, %s, %s)",
                               (version, time.time(), description))
    return before, SCHEMA_VERSION


def has_schema(url: str) -> bool:
    """Whether the database at ``url`` holds iglearn's schema (read only: an empty database
    stays empty, so that a start refused for its lack of keys leaves nothing there)."""
    connection = _connect(url)
    try:
        return schema_version(connection) > 0
    finally:
        connection.close()


def upgrade(url: str) -> tuple[int, int]:
    """``iglearn serve db upgrade``: bring the database at ``url`` to this iglearn's schema
    version; (version before, version after)."""
    connection = _connect(url)
    try:
        return migrate(connection, url, upgrade=True)
    finally:
        connection.close()


class PostgresStorage(Storage):
    """:class:`~iglearn.service.storage.Storage` on the PostgreSQL database at ``url`` (a
    libpq URL ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE``; a password may also
    come from ``PGPASSWORD`` or ``~/.pgpass``), with at most ``pool_size`` pooled
    connections. Safe to use from several threads."""

    concurrent_writes = True

    def __init__(self, url: str, pool_size: int = 4, upgrade: bool = False):
        self.url = url
        connection = _connect(url)
        try:
            migrate(connection, url, upgrade)
        finally:
            connection.close()
        self._pool = ConnectionPool(url, min_size=1, max_size=max(1, pool_size),
                                    kwargs={"autocommit": True}, open=True,
                                    name="iglearn", timeout=POOL_WAIT_SECONDS,
                                    reconnect_timeout=RECONNECT_SECONDS)
        self._lease: Any = None
        self._held = False
        self._unreachable: str | None = None

    def __repr__(self) -> str:
        return f"PostgresStorage({shown_url(self.url)!r})"

    # -- plumbing --------------------------------------------------------------------------
    @property
    def unreachable(self) -> str | None:
        return self._unreachable

    @contextlib.contextmanager
    def _connection(self, wait: float | None = None) -> Iterator[Any]:
        """A pooled connection, within ``wait`` seconds (default :data:`POOL_WAIT_SECONDS`,
        or :data:`UNREACHABLE_WAIT_SECONDS` during an outage). No connection within it, or
        one lost while it is used, raises :class:`StorageUnavailable` (the outage begins);
        a use that succeeds ends an outage. The outage is the process's (:data:`OUTAGE`,
        which its storages share), and a use that began with its short wait but ended
        after another use ended it waits the full one again: the pool is still replacing
        the connections it lost."""
        short = wait is None and OUTAGE.since is not None
        if wait is None:
            wait = UNREACHABLE_WAIT_SECONDS if short else POOL_WAIT_SECONDS
        try:
            try:
                connection = self._pool.getconn(timeout=wait)
            except PoolTimeout:
                if not short or OUTAGE.since is not None:
                    raise
                wait = POOL_WAIT_SECONDS
                connection = self._pool.getconn(timeout=wait)
            try:  # as ConnectionPool.connection(): commit or roll back, then give it back
                with connection:
                    yield connection
            finally:
                self._pool.putconn(connection)
        except (PoolTimeout, psycopg.OperationalError) as e:
            if not connection_lost(e):
                raise
            reason = (f"no connection within {wait:.2g} s" if isinstance(e, PoolTimeout)
                      else f"connection lost: {one_line(e)}")
            error = StorageUnavailable(reason)
            self._unreachable = error.problem
            OUTAGE.down(f"{shown_url(self.url)}: {reason}")
            raise error from e
        if self._unreachable is not None:
            self._unreachable = None
            OUTAGE.up()

    def _read(self, query: str, values: Sequence[Any] = (), wait: float | None = None
              ) -> list[tuple[Any, ...]]:
        with self._connection(wait) as connection:
            return connection.execute(query, values).fetchall()

    def probe(self) -> str | None:
        """``SELECT 1`` on a pooled connection within :data:`PROBE_SECONDS`; a connection
        the server closed while it sat in the pool (the server restarted) fails at once and
        is replaced, so then the probe asks again."""
        deadline = time.monotonic() + PROBE_SECONDS
        while True:
            try:
                self._read("SELECT 1", wait=max(0.01, deadline - time.monotonic()))
                return None
            except StorageUnavailable as e:
                if time.monotonic() >= deadline:
                    return e.problem

    def _write(self, work: Callable[[Any], T], transaction: bool = True) -> T:
        """Run ``work(connection)`` in one transaction (``transaction``; else its statements
        commit one by one, which saves two round trips when it is one statement), again
        when it lost a deadlock or a serialisation conflict to another replica."""
        for attempt in range(RETRIES):
            try:
                with self._connection() as connection:
                    if not transaction:
                        return work(connection)
                    with connection.transaction():
                        return work(connection)
            except (pg_errors.DeadlockDetected, pg_errors.SerializationFailure):
                if attempt == RETRIES - 1:
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    # -- decisions and feedback ------------------------------------------------------------
    def add_decisions(self, decisions: Sequence[Decision]) -> list[Decision]:
        out = list(decisions)
        if not out:
            return out
        columns = (
            [d.event_id for d in out], [float(d.decided_at) for d in out],
            [np.asarray(d.context, np.float32).tobytes() for d in out],
            [int(d.action) for d in out], [float(d.probability) for d in out],
            [np.asarray(d.probabilities, np.float64).tobytes() for d in out],
            [int(d.model_version) for d in out], [bool(d.explored) for d in out],
            [bool(d.learnable) for d in out])

        def insert(connection: Any) -> list[Decision]:
            # one statement, so one commit: the stored decisions of ids stored before are
            # read after it (they were committed before it, by this or another replica)
            inserted = connection.execute(
                "INSERT INTO iglearn_interactions (event_id, decided_at, context, action, "
                "probability, probabilities, model_version, explored, learnable) "
                "SELECT * FROM unnest(%s::text[], %s::float8[], %s::bytea[], %s::int4[], "
                "%s::float8[], %s::bytea[], %s::int4[], %s::bool[], %s::bool[]) "
                "ON CONFLICT (event_id) DO NOTHING RETURNING event_id", columns).fetchall()
            if len(inserted) == len(out):
                return out
            stored = {d.event_id: d for d in self._decisions(connection, columns[0])}
            return [stored[d.event_id] for d in out]

        return self._write(insert, transaction=False)

    @staticmethod
    def _decisions(connection: Any, event_ids: list[str]) -> list[Decision]:
        rows = connection.execute(
            "SELECT event_id, context, action, probability, probabilities, model_version, "
            "explored, learnable, decided_at FROM iglearn_interactions "
            "WHERE event_id = ANY(%s)", (event_ids,)).fetchall()
        return [Decision(r[0], np.frombuffer(r[1], np.float32), int(r[2]), float(r[3]),
                         np.frombuffer(r[4], np.float64), int(r[5]), bool(r[6]), bool(r[7]),
                         float(r[8])) for r in rows]

    def _decision(self, event_id: str) -> Decision:
        """The stored decision of ``event_id``."""
        with self._connection() as connection:
            found = self._decisions(connection, [event_id])
        if not found:
            raise IGLearnError(f"no decision has event id {event_id}")
        return found[0]

    def add_feedback(self, feedback: Sequence[Feedback], join_window: float
                     ) -> list[FeedbackOutcome]:
        first: dict[str, Feedback] = {}
        for f in feedback:  # a second feedback for one event in one batch comes after
            first.setdefault(f.event_id, f)
        items = list(first.values())
        columns = ([f.event_id for f in items],
                   [np.asarray(f.feedback, np.float32).tobytes() for f in items],
                   [float(f.received_at) for f in items], [bool(f.definitely_bad) for f in items])

        def join(connection: Any) -> dict[str, FeedbackOutcome]:
            rows = connection.execute(
                "UPDATE iglearn_interactions AS i SET feedback = f.feedback, "
                "feedback_at = f.at, definitely_bad = f.bad, late = (f.at - i.decided_at > %s) "
                "FROM unnest(%s::text[], %s::bytea[], %s::float8[], %s::bool[]) "
                "AS f(event_id, feedback, at, bad) "
                "WHERE i.event_id = f.event_id AND i.feedback_at IS NULL "
                "RETURNING i.event_id, i.late", (float(join_window), *columns)).fetchall()
            outcome = {r[0]: FeedbackOutcome.LATE if r[1] else FeedbackOutcome.JOINED
                       for r in rows}
            rest = [e for e in columns[0] if e not in outcome]
            if rest:  # had feedback already (a decision stored since the update: unknown)
                known = {r[0] for r in connection.execute(
                    "SELECT event_id FROM iglearn_interactions WHERE event_id = ANY(%s) "
                    "AND feedback_at IS NOT NULL", (rest,)).fetchall()}
                for e in rest:
                    outcome[e] = (FeedbackOutcome.DUPLICATE if e in known
                                  else FeedbackOutcome.UNKNOWN)
            return outcome

        outcome = self._write(join, transaction=False)  # the update commits by itself
        outcomes, seen = [], set()
        for f in feedback:
            result = outcome[f.event_id]
            if f.event_id in seen and result is not FeedbackOutcome.UNKNOWN:
                result = FeedbackOutcome.DUPLICATE
            seen.add(f.event_id)
            outcomes.append(result)
        return outcomes

    def joined(self, since: float | None = None, until: float | None = None,
               learnable_only: bool = False, latest: int | None = None) -> Interactions:
        query, values = joined_query("iglearn_interactions", "%s", "false", "true", since, until,
                                     learnable_only, latest)
        return interactions_from_rows(self._read(query, values)[::-1])

    def counts(self) -> Counts:
        row = self._read(
            "SELECT count(*), count(*) FILTER (WHERE feedback_at IS NOT NULL AND NOT late), "
            "count(*) FILTER (WHERE feedback_at IS NOT NULL AND NOT late AND learnable), "
            "count(*) FILTER (WHERE late) FROM iglearn_interactions")[0]
        return Counts(int(row[0]), int(row[1]), int(row[3]), int(row[2]))

    def delete_before(self, when: float) -> int:
        return self._write(lambda c: c.execute(
            "DELETE FROM iglearn_interactions WHERE decided_at < %s", (when,)).rowcount)

    def clear(self) -> None:
        def work(connection: Any) -> None:
            connection.execute("DELETE FROM iglearn_interactions")
            connection.execute("DELETE FROM iglearn_models")
            connection.execute("DELETE FROM iglearn_state")

        self._write(work)

    # -- model versions ----------------------------------------------------------------------
    @staticmethod
    def _lock_models(connection: Any) -> None:
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, MODELS_LOCK))

    @staticmethod
    def _served(connection: Any) -> int:
        row = connection.execute("SELECT value FROM iglearn_state WHERE name = "
                                 "'served_version'").fetchone()
        return 0 if row is None else int(json.loads(row[0]))

    @staticmethod
    def _put(connection: Any, name: str, value: Any) -> None:
        connection.execute("INSERT INTO iglearn_state VALUES (%s, %s) ON CONFLICT (name) DO "
                           "UPDATE SET value = excluded.value",
                           (name, safejson.dumps(value)))

    def add_model(self, algorithm: str, interactions: int, fit_seconds: float,
                  summary: dict[str, Any], archive: bytes, serve: bool = True) -> ModelRecord:
        now = time.time()

        def store(connection: Any) -> int:
            self._lock_models(connection)  # replicas storing at once get distinct versions
            last = connection.execute("SELECT coalesce(max(version), 0) FROM iglearn_models"
                                      ).fetchone()[0]
            version = max(int(last), self._served(connection)) + 1
            connection.execute("INSERT INTO iglearn_models VALUES (%s, %s, %s, %s, %s, %s, %s)",
                               (version, now, algorithm, interactions, fit_seconds,
                                safejson.dumps(summary), archive))
            if serve:
                self._put(connection, "served_version", version)
            return version

        version = self._write(store)
        return ModelRecord(version, now, algorithm, interactions, fit_seconds, summary)

    def models(self) -> list[ModelRecord]:
        rows = self._read("SELECT version, created_at, algorithm, interactions, fit_seconds, "
                          "summary FROM iglearn_models ORDER BY version")
        return [ModelRecord(int(r[0]), float(r[1]), r[2], int(r[3]), float(r[4]),
                            json.loads(r[5])) for r in rows]

    def model_archive(self, version: int) -> bytes:
        rows = self._read("SELECT archive FROM iglearn_models WHERE version = %s", (version,))
        if not rows:
            raise IGLearnError(f"no model version {version} is stored")
        return bytes(rows[0][0])

    def served_version(self) -> int:
        with self._connection() as connection:
            return self._served(connection)

    def serve(self, version: int) -> None:
        def choose(connection: Any) -> None:
            self._lock_models(connection)
            if connection.execute("SELECT 1 FROM iglearn_models WHERE version = %s",
                                  (version,)).fetchone() is None:
                raise IGLearnError(f"no model version {version} is stored")
            self._put(connection, "served_version", version)

        self._write(choose)

    def prune_models(self, keep: int) -> int:
        def prune(connection: Any) -> int:
            self._lock_models(connection)
            return int(connection.execute(
                "DELETE FROM iglearn_models WHERE version != %s AND version NOT IN "
                "(SELECT version FROM iglearn_models ORDER BY version DESC LIMIT %s)",
                (self._served(connection), keep)).rowcount)

        return self._write(prune)

    # -- keys and shared state ---------------------------------------------------------------
    def add_key(self, digest: str, role: str) -> None:
        self._write(lambda c: c.execute("INSERT INTO iglearn_keys VALUES (%s, %s, %s)",
                                        (digest, role, time.time())))

    def keys(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._read("SELECT digest, role FROM iglearn_keys")]

    def key_records(self) -> list[KeyRecord]:
        rows = self._read("SELECT k.digest, k.role, k.created_at, s.value FROM iglearn_keys k "
                          "LEFT JOIN iglearn_state s ON s.name = %s || k.digest "
                          "ORDER BY k.created_at", (KEY_USE_STATE,))
        return [KeyRecord(r[0], r[1], float(r[2]), None if r[3] is None else float(r[3]))
                for r in rows]

    def remove_key(self, digest: str) -> bool:
        def remove(connection: Any) -> bool:
            connection.execute("DELETE FROM iglearn_state WHERE name = %s",
                               (KEY_USE_STATE + digest,))
            return connection.execute("DELETE FROM iglearn_keys WHERE digest = %s",
                                      (digest,)).rowcount > 0
        return self._write(remove)

    def record_key_use(self, used: dict[str, float]) -> None:
        def record(connection: Any) -> None:
            with connection.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO iglearn_state SELECT %s, %s WHERE EXISTS (SELECT 1 FROM "
                    "iglearn_keys WHERE digest = %s) ON CONFLICT (name) DO UPDATE SET value = "
                    "GREATEST(excluded.value::float8, iglearn_state.value::float8)::text",
                    [(KEY_USE_STATE + d, repr(float(t)), d) for d, t in sorted(used.items())])
        self._write(record)

    def state(self, name: str) -> Any:
        rows = self._read("SELECT value FROM iglearn_state WHERE name = %s", (name,))
        return None if not rows else json.loads(rows[0][0])

    def set_state(self, name: str, value: Any) -> None:
        self._write(lambda c: self._put(c, name, value))

    # -- the re-fit lease --------------------------------------------------------------------
    def hold_refit_lease(self) -> bool:
        """The lease is a session advisory lock on a connection of its own; a lost
        connection (the server restarted, the network failed) has lost the lease too."""
        try:
            if self._lease is None:
                self._lease = _connect(self.url)
                self._held = False
            if self._held:
                self._lease.execute("SELECT 1")
            else:
                self._held = bool(self._lease.execute(
                    "SELECT pg_try_advisory_lock(%s, %s)",
                    (LOCK_NAMESPACE, REFIT_LEASE)).fetchone()[0])
        except (psycopg.Error, IGLearnError):
            if self._lease is not None:
                self._lease.close()
            self._lease, self._held = None, False
        return self._held

    def close(self) -> None:
        self._pool.close()
        if self._lease is not None:
            self._lease.close()
            self._lease, self._held = None, False
