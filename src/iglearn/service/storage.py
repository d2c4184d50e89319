"""Where the decision service keeps everything: decisions and their feedback, model versions,
API keys and a little shared state. :class:`Storage` is the one interface the service and its
learning worker use; :class:`SQLiteStorage` implements it on an embedded SQLite database in
WAL mode, :class:`~iglearn.service.postgres.PostgresStorage` on a PostgreSQL database that
several service replicas share; :func:`open_storage` opens the one the ``db`` setting
names. Every write is committed before the method returns, so an answer sent after it
survives a crash of the service.

A decision and its feedback are one row (an interaction): the decision's context, action,
probability of that action and the whole distribution it was drawn from, the model version
that made it, whether it explored and whether re-fits may learn from it; the feedback, when
it comes, fills the row's feedback columns once (a second feedback is refused) and is marked
late when it comes after the join window.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from iglearn.data import safejson
from iglearn.errors import IGLearnError

SCHEMA_VERSION = 1


class StorageUnavailable(IGLearnError):
    """The database cannot be reached now: its server is down or restarting, or the network
    to it failed (a PostgreSQL database; an embedded SQLite file is always there). It is
    an outage, not a mistake of the request: the service answers 503 with ``Retry-After``
    and goes on, and the same request succeeds once the database is back. A call that
    raised it stored nothing, unless the connection was lost during its commit (then the
    commit either happened or did not; a decision retried with its event id gets the
    stored one back)."""

    def __init__(self, reason: str):
        self.reason = reason
        """Why, in a few words: no connection came within the wait, or how it was lost."""
        self.problem = f"the database is unreachable ({reason})"
        """What ``/readyz`` and ``/healthz`` say."""
        super().__init__(f"{self.problem}; ask again shortly")


@dataclass(frozen=True)
class Decision:
    """One served decision, as stored."""

    event_id: str
    """The caller's (or the service's) id of the decision, unique."""
    context: np.ndarray
    """The context x, float32 (d_x,)."""
    action: int
    """The action served."""
    probability: float
    """The exact probability with which that action was drawn."""
    probabilities: np.ndarray
    """The whole distribution it was drawn from, float64 (K,)."""
    model_version: int
    """The model version that made the decision (0: none yet, uniform play)."""
    explored: bool
    """Whether the action came from exploration rather than the policy."""
    learnable: bool
    """Whether re-fits may learn from this interaction once its feedback is joined."""
    decided_at: float
    """Unix time of the decision."""


@dataclass(frozen=True)
class Feedback:
    """One feedback vector for a decision."""

    event_id: str
    feedback: np.ndarray
    """The feedback vector y, float32 (d_y,)."""
    definitely_bad: bool
    """The caller flags the interaction as certainly bad (IGL-P's "definitely negative")."""
    received_at: float
    """Unix time it arrived."""


class FeedbackOutcome(Enum):
    """What became of a feedback."""

    JOINED = "joined"
    """Stored with its decision, within the join window: learned from."""
    LATE = "late"
    """Stored with its decision after the join window: not learned from."""
    UNKNOWN = "unknown"
    """No decision has this event id: nothing stored."""
    DUPLICATE = "duplicate"
    """The decision already has feedback: nothing stored."""


@dataclass(frozen=True)
class Interactions:
    """Joined interactions (decisions with their feedback), as aligned arrays in the order
    they were decided."""

    event_id: list[str]
    context: np.ndarray
    action: np.ndarray
    probability: np.ndarray
    feedback: np.ndarray
    definitely_bad: np.ndarray
    model_version: np.ndarray
    decided_at: np.ndarray

    def __len__(self) -> int:
        return len(self.event_id)


@dataclass(frozen=True)
class Counts:
    """How many interactions the storage holds."""

    decisions: int
    joined: int
    """Decisions with feedback within the join window."""
    late: int
    """Decisions with feedback after the join window."""
    learnable: int
    """Joined interactions re-fits may learn from."""


@dataclass(frozen=True)
class ModelRecord:
    """One stored model version (its archive is fetched separately)."""

    version: int
    created_at: float
    algorithm: str
    interactions: int
    """Interactions it was fitted on (0 for an imported model)."""
    fit_seconds: float
    summary: dict[str, Any]
    """What the fit reported (indicator, Lemma 5, settings, how it came: refit or import)."""

    @property
    def held_back(self) -> str | None:
        """Why this re-fit was stored but not served (its summary's ``held_back``), or None
        for a version meant to be served."""
        return self.summary.get("held_back")


@dataclass(frozen=True)
class KeyRecord:
    """One stored API key, as ``iglearn serve keys list`` shows it (never the key)."""

    digest: str
    """The key's SHA-256, hex (its id is the start of it)."""
    role: str
    created_at: float
    last_used: float | None
    """Unix time of its last accepted request (recorded every second or so, not per
    request); None if never used."""


KEY_USE_STATE = "key_last_used:"
"""The shared state's name of a key's last use is this and its hash."""


def joined_query(table: str, mark: str, false: str, true: str, since: float | None,
                 until: float | None, learnable_only: bool, latest: int | None
                 ) -> tuple[str, list[Any]]:
    """The query and its values that select the joined, not late interactions of ``table``
    decided in [since, until) (only learnable ones with ``learnable_only``; the ``latest``
    newest ones only, if given), newest first, in the columns
    :func:`interactions_from_rows` reads: one query for every backend, with its parameter
    placeholder ``mark`` and its literals ``false`` and ``true`` of its flag columns ('0' and
    '1' in SQLite, whose partial index names ``late = 0``; 'false' and 'true' in
    PostgreSQL)."""
    where = ["feedback_at IS NOT NULL", f"late = {false}"]
    values: list[Any] = []
    if learnable_only:
        where.append(f"learnable = {true}")
    if since is not None:
        where.append(f"decided_at >= {mark}")
        values.append(since)
    if until is not None:
        where.append(f"decided_at < {mark}")
        values.append(until)
    query = (f"SELECT seq, event_id, context, action, probability, feedback, "
             f"definitely_bad, model_version, decided_at FROM {table} "
             f"WHERE {' AND '.join(where)} ORDER BY seq DESC")
    if latest is not None:
        query += f" LIMIT {mark}"
        values.append(int(latest))
    return query, values


def interactions_from_rows(rows: Sequence[Sequence[Any]]) -> Interactions:
    """:class:`Interactions` from the rows (seq, event_id, context, action, probability,
    feedback, definitely_bad, model_version, decided_at) of a query, oldest first; vectors
    are stored as the bytes of float32 arrays."""
    if not rows:
        empty = np.empty((0, 0), np.float32)
        return Interactions([], empty, np.empty(0, np.int64), np.empty(0), empty,
                            np.empty(0, bool), np.empty(0, np.int64), np.empty(0))
    columns = list(zip(*rows, strict=True))
    return Interactions(
        event_id=list(columns[1]),
        context=np.frombuffer(b"".join(columns[2]), np.float32).reshape(len(rows), -1),
        action=np.array(columns[3], np.int64),
        probability=np.array(columns[4], np.float64),
        feedback=np.frombuffer(b"".join(columns[5]), np.float32).reshape(len(rows), -1),
        definitely_bad=np.array(columns[6], bool),
        model_version=np.array(columns[7], np.int64),
        decided_at=np.array(columns[8], np.float64))


class Storage(ABC):
    """The storage interface of the decision service. Every method commits what it writes
    before returning; methods may be called from one thread at a time per object, or from
    several at once where ``concurrent_writes`` says so."""

    concurrent_writes: bool = False
    """Whether commits from several threads at once proceed side by side (a database
    server) rather than one after another (an embedded file); the service then commits from
    worker threads."""

    @abstractmethod
    def add_decisions(self, decisions: Sequence[Decision]) -> list[Decision]:
        """Store new decisions in one commit. A decision whose event id is already stored is
        not stored again: the stored one is returned in its place (retries are idempotent)."""

    @abstractmethod
    def add_feedback(self, feedback: Sequence[Feedback], join_window: float
                     ) -> list[FeedbackOutcome]:
        """Join feedback vectors to their decisions in one commit, in order (a feedback that
        arrives more than ``join_window`` seconds after its decision is stored as late);
        the outcome of each."""

    def add_interactions(self, decisions: Sequence[Decision], feedback: Sequence[Feedback],
                         join_window: float) -> tuple[list[Decision], list[FeedbackOutcome]]:
        """:meth:`add_decisions` and then :meth:`add_feedback` (each skipped when given
        none): what each returns. An embedded file stores both in one commit."""
        return (self.add_decisions(decisions) if decisions else [],
                self.add_feedback(feedback, join_window) if feedback else [])

    def probe(self) -> str | None:
        """Whether the database can be reached now, asked cheaply and within a second or
        so: None, or the problem (:attr:`StorageUnavailable.problem`). An embedded file is
        always there."""
        return None

    @property
    def unreachable(self) -> str | None:
        """The problem of the outage the last use of the database ran into, until a use
        succeeds again (None: it answered); an embedded file is always there."""
        return None

    @abstractmethod
    def joined(self, since: float | None = None, until: float | None = None,
               learnable_only: bool = False, latest: int | None = None) -> Interactions:
        """The joined interactions (not late) decided in [since, until), oldest first;
        ``latest``: only that many of the most recent."""

    @abstractmethod
    def counts(self) -> Counts:
        """The numbers of stored decisions, joined, late and learnable interactions."""

    @abstractmethod
    def add_model(self, algorithm: str, interactions: int, fit_seconds: float,
                  summary: dict[str, Any], archive: bytes, serve: bool = True) -> ModelRecord:
        """Store a model archive as the next version and serve it (with ``serve`` False,
        store it only: the served version, which every replica's pickup follows, stays)."""

    @abstractmethod
    def models(self) -> list[ModelRecord]:
        """Every stored model version, oldest first."""

    @abstractmethod
    def model_archive(self, version: int) -> bytes:
        """The archive of a stored version (an IGLearnError if there is none)."""

    @abstractmethod
    def served_version(self) -> int:
        """The version to serve (0: none yet)."""

    @abstractmethod
    def serve(self, version: int) -> None:
        """Serve a stored version (rollback)."""

    @abstractmethod
    def prune_models(self, keep: int) -> int:
        """Delete all but the ``keep`` latest versions, never the served one; how many."""

    @abstractmethod
    def add_key(self, digest: str, role: str) -> None:
        """Store an API key's hash and role."""

    @abstractmethod
    def keys(self) -> list[tuple[str, str]]:
        """Every stored key's (hash, role)."""

    @abstractmethod
    def key_records(self) -> list[KeyRecord]:
        """Every stored key's hash, role, creation and last use, oldest first."""

    @abstractmethod
    def remove_key(self, digest: str) -> bool:
        """Delete a key (revoked) and its last use; whether it was stored."""

    @abstractmethod
    def record_key_use(self, used: dict[str, float]) -> None:
        """Record when keys were last used ({hash: unix time}) in one commit; a later time
        already stored (by another replica) is kept, and a key no longer stored is
        skipped."""

    @abstractmethod
    def state(self, name: str) -> Any:
        """A JSON value shared by the service's processes (None if unset)."""

    @abstractmethod
    def set_state(self, name: str, value: Any) -> None:
        """Set a shared JSON value."""

    @abstractmethod
    def delete_before(self, when: float) -> int:
        """Delete the interactions decided before ``when`` (retention); how many."""

    @abstractmethod
    def hold_refit_lease(self) -> bool:
        """Whether this object holds the re-fit lease, taking it if it is free: of all the
        processes on one database (every replica's learning worker), only the holder
        re-fits. It is held until :meth:`close`, or until the process ends however it ends
        (a SIGKILL included), and then another process may take it."""

    @abstractmethod
    def close(self) -> None:
        """Release the database (and the re-fit lease)."""

    def clear(self) -> None:
        """Delete every interaction, model version and state value (the keys stay): a fresh
        start, as the demo's reset button asks."""
        raise IGLearnError(f"{type(self).__name__} cannot be cleared; use a new database")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS interactions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL UNIQUE,
    decided_at REAL NOT NULL,
    context BLOB NOT NULL,
    action INTEGER NOT NULL,
    probability REAL NOT NULL,
    probabilities BLOB NOT NULL,
    model_version INTEGER NOT NULL,
    explored INTEGER NOT NULL,
    learnable INTEGER NOT NULL,
    feedback BLOB,
    feedback_at REAL,
    definitely_bad INTEGER,
    late INTEGER
);
CREATE INDEX IF NOT EXISTS interactions_joined ON interactions (learnable, decided_at)
    WHERE feedback_at IS NOT NULL AND late = 0;
CREATE INDEX IF NOT EXISTS interactions_decided ON interactions (decided_at);
CREATE TABLE IF NOT EXISTS models (
    version INTEGER PRIMARY KEY,
    created_at REAL NOT NULL,
    algorithm TEXT NOT NULL,
    interactions INTEGER NOT NULL,
    fit_seconds REAL NOT NULL,
    summary TEXT NOT NULL,
    archive BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
    digest TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


_TABLES = frozenset({"meta", "interactions", "models", "api_keys"})
"""The tables of iglearn's SQLite schema."""


def check_not_foreign(path: Path, db: sqlite3.Connection, adopt: bool = False) -> None:
    """Refuse the SQLite database ``db`` (the file ``path``) if another application's
    tables are in it: iglearn adds its tables to an empty file or to its own database only,
    and to another application's file with ``adopt`` (``iglearn serve db upgrade --adopt``),
    never when a table of that file has the name of one of iglearn's."""
    names = {row[0] for row in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    if not names or (names >= _TABLES and db.execute(
            "SELECT 1 FROM meta WHERE name = 'schema_version'").fetchone() is not None):
        return
    clash = sorted(names & _TABLES)
    if clash:
        raise IGLearnError(f"{path}: not an iglearn database, and its table {clash[0]} has "
                           f"the name of one of iglearn's; set [server] db to a new file")
    if not adopt:
        others = sorted(names)
        listed = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5
                                          else "")
        raise IGLearnError(f"{path}: holds another application's tables ({listed}), not "
                           f"iglearn's; set [server] db to a new file, or run 'iglearn serve "
                           f"db upgrade --adopt' to add iglearn's tables to it")


class SQLiteStorage(Storage):
    """:class:`Storage` on an SQLite database file (WAL, so the learning worker reads while
    the service writes; ``synchronous``: 'normal' survives a crash of the service, 'full'
    also a power cut).

    With ``checkpoint_seconds``, this connection never checkpoints the WAL into the database
    itself (in WAL mode with synchronous 'normal', checkpoints are the only writes that wait
    for the disk): a thread with its own connection does, that often, so that no commit on
    a request's path waits for one."""

    def __init__(self, path: str | Path, synchronous: str = "normal", timeout: float = 30.0,
                 checkpoint_seconds: float | None = None, adopt: bool = False):
        self.path = Path(path)
        if self.path.parent.exists() and not self.path.parent.is_dir():
            raise IGLearnError(f"{self.path}: {self.path.parent} is a file, not a folder; set "
                               f"[server] db (or --db) to a path in a folder")
        if not self.path.parent.is_dir():
            raise IGLearnError(f"{self.path}: the folder {self.path.parent} does not exist; "
                               f"create it or set [server] db (or --db) to another path")
        if self.path.is_dir():
            raise IGLearnError(f"{self.path} is a folder, not an SQLite database file; set "
                               f"[server] db (or --db) to a file (such as "
                               f"{self.path / 'service.db'})")
        try:
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None,
                                       check_same_thread=False)
        except sqlite3.OperationalError as e:  # a folder it may not write, a file it may not read
            raise IGLearnError(f"{self.path}: cannot open or create the SQLite database "
                               f"({e}); make the file and its folder {self.path.parent} "
                               f"readable and writable by the service, or set [server] db "
                               f"(or --db) to another path") from None
        try:
            self._open(synchronous, timeout, adopt)
        except BaseException:
            self._db.close()
            raise
        self._lock = threading.Lock()
        self._lease: int | None = None
        self._stop = threading.Event()
        self._checkpointer: threading.Thread | None = None
        if checkpoint_seconds is not None:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpointer = threading.Thread(
                target=self._checkpoints, args=(checkpoint_seconds, timeout), daemon=True,
                name="iglearn-wal-checkpoint")
            self._checkpointer.start()

    def _open(self, synchronous: str, timeout: float, adopt: bool) -> None:
        """Set the connection up, and create the schema in a file that has none; refuse an
        SQLite file of another application (its tables are not iglearn's) unless ``adopt``
        (:func:`check_not_foreign`)."""
        try:
            self._db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            check_not_foreign(self.path, self._db, adopt)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            with self._transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                row = self._db.execute("SELECT value FROM meta WHERE name = 'schema_version'"
                                       ).fetchone()
                if row is None:
                    self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                                     (str(SCHEMA_VERSION),))
                elif int(row[0]) != SCHEMA_VERSION:
                    raise IGLearnError(f"{self.path}: database schema version {row[0]}, but "
                                       f"this iglearn uses {SCHEMA_VERSION}; use a new db file")
        except sqlite3.DatabaseError as e:
            raise IGLearnError(f"{self.path}: cannot open the database ({e}); check the path, "
                               f"or choose a new file for [server] db") from None

    def _checkpoints(self, every: float, timeout: float) -> None:
        """Checkpoint the WAL every ``every`` seconds until closed (its own connection)."""
        db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        try:
            while not self._stop.wait(every):
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as e:  # the service goes on; the next start checkpoints
            print(f"iglearn serve: WAL checkpoint failed: {e}", file=sys.stderr)
        finally:
            db.close()

    class _Tx:
        def __init__(self, db: sqlite3.Connection):
            self.db = db

        def __enter__(self) -> sqlite3.Connection:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db

        def __exit__(self, kind: object, *rest: object) -> None:
            self.db.execute("COMMIT" if kind is None else "ROLLBACK")

    def _transaction(self) -> SQLiteStorage._Tx:
        return SQLiteStorage._Tx(self._db)

    def add_decisions(self, decisions: Sequence[Decision]) -> list[Decision]:
        with self._lock, self._transaction() as db:
            return self._insert_decisions(db, decisions)

    def add_feedback(self, feedback: Sequence[Feedback], join_window: float
                     ) -> list[FeedbackOutcome]:
        with self._lock, self._transaction() as db:
            return self._join_feedback(db, feedback, join_window)

    def add_interactions(self, decisions: Sequence[Decision], feedback: Sequence[Feedback],
                         join_window: float) -> tuple[list[Decision], list[FeedbackOutcome]]:
        """Both in one commit: a commit's cost (its WAL frames) is paid once."""
        with self._lock, self._transaction() as db:
            return (self._insert_decisions(db, decisions) if decisions else [],
                    self._join_feedback(db, feedback, join_window) if feedback else [])

    def _insert_decisions(self, db: sqlite3.Connection, decisions: Sequence[Decision]
                          ) -> list[Decision]:
        out = list(decisions)
        rows = [(d.event_id, d.decided_at, np.asarray(d.context, np.float32).tobytes(),
                 d.action, d.probability, np.asarray(d.probabilities, np.float64).tobytes(),
                 d.model_version, int(d.explored), int(d.learnable)) for d in decisions]
        cursor = db.executemany(
            "INSERT OR IGNORE INTO interactions (event_id, decided_at, context, action, "
            "probability, probabilities, model_version, explored, learnable) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        if cursor.rowcount != len(rows):  # some event ids were stored before
            out = [self._decision(d.event_id) for d in decisions]
        return out

    def _decision(self, event_id: str) -> Decision:
        row = self._db.execute(
            "SELECT event_id, context, action, probability, probabilities, model_version, "
            "explored, learnable, decided_at FROM interactions WHERE event_id = ?",
            (event_id,)).fetchone()
        return Decision(row[0], np.frombuffer(row[1], np.float32), int(row[2]), float(row[3]),
                        np.frombuffer(row[4], np.float64), int(row[5]), bool(row[6]),
                        bool(row[7]), float(row[8]))

    @staticmethod
    def _join_feedback(db: sqlite3.Connection, feedback: Sequence[Feedback],
                       join_window: float) -> list[FeedbackOutcome]:
        outcomes = []
        for f in feedback:
            row = db.execute(
                "UPDATE interactions SET feedback = ?, feedback_at = ?, definitely_bad = ?, "
                "late = (? - decided_at > ?) WHERE event_id = ? AND feedback_at IS NULL "
                "RETURNING late",
                (np.asarray(f.feedback, np.float32).tobytes(), f.received_at,
                 int(f.definitely_bad), f.received_at, join_window, f.event_id)).fetchone()
            if row is not None:
                outcomes.append(FeedbackOutcome.LATE if row[0] else FeedbackOutcome.JOINED)
            elif db.execute("SELECT 1 FROM interactions WHERE event_id = ?",
                            (f.event_id,)).fetchone() is None:
                outcomes.append(FeedbackOutcome.UNKNOWN)
            else:
                outcomes.append(FeedbackOutcome.DUPLICATE)
        return outcomes

    def joined(self, since: float | None = None, until: float | None = None,
               learnable_only: bool = False, latest: int | None = None) -> Interactions:
        query, values = joined_query("interactions", "?", "0", "1", since, until, learnable_only,
                                     latest)
        with self._lock:
            rows = self._db.execute(query, values).fetchall()[::-1]
        return interactions_from_rows(rows)

    def counts(self) -> Counts:
        with self._lock:
            decisions = self._db.execute("SELECT count(*) FROM interactions").fetchone()[0]
            joined, learnable = self._db.execute(
                "SELECT count(*), coalesce(sum(learnable), 0) FROM interactions "
                "WHERE feedback_at IS NOT NULL AND late = 0").fetchone()
            late = self._db.execute("SELECT count(*) FROM interactions WHERE late = 1"
                                    ).fetchone()[0]
        return Counts(int(decisions), int(joined), int(late), int(learnable))

    def add_model(self, algorithm: str, interactions: int, fit_seconds: float,
                  summary: dict[str, Any], archive: bytes, serve: bool = True) -> ModelRecord:
        now = time.time()
        with self._lock, self._transaction() as db:
            last = db.execute("SELECT coalesce(max(version), 0) FROM models").fetchone()[0]
            served = self._served(db)
            version = max(int(last), served) + 1
            db.execute("INSERT INTO models VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (version, now, algorithm, interactions, fit_seconds,
                        safejson.dumps(summary), archive))
            if serve:
                self._put(db, "served_version", version)
        return ModelRecord(version, now, algorithm, interactions, fit_seconds, summary)

    def models(self) -> list[ModelRecord]:
        with self._lock:
            rows = self._db.execute("SELECT version, created_at, algorithm, interactions, "
                                    "fit_seconds, summary FROM models ORDER BY version"
                                    ).fetchall()
        return [ModelRecord(int(r[0]), float(r[1]), r[2], int(r[3]), float(r[4]),
                            json.loads(r[5])) for r in rows]

    def model_archive(self, version: int) -> bytes:
        with self._lock:
            row = self._db.execute("SELECT archive FROM models WHERE version = ?",
                                   (version,)).fetchone()
        if row is None:
            raise IGLearnError(f"no model version {version} is stored")
        return bytes(row[0])

    def served_version(self) -> int:
        with self._lock:
            return self._served(self._db)

    @staticmethod
    def _served(db: sqlite3.Connection) -> int:
        row = db.execute("SELECT value FROM meta WHERE name = 'served_version'").fetchone()
        return 0 if row is None else int(json.loads(row[0]))

    def serve(self, version: int) -> None:
        with self._lock, self._transaction() as db:
            if db.execute("SELECT 1 FROM models WHERE version = ?", (version,)).fetchone() is None:
                raise IGLearnError(f"no model version {version} is stored")
            self._put(db, "served_version", version)

    def prune_models(self, keep: int) -> int:
        with self._lock, self._transaction() as db:
            served = self._served(db)
            cursor = db.execute(
                "DELETE FROM models WHERE version != ? AND version NOT IN "
                "(SELECT version FROM models ORDER BY version DESC LIMIT ?)", (served, keep))
            return cursor.rowcount

    def add_key(self, digest: str, role: str) -> None:
        with self._lock, self._transaction() as db:
            db.execute("INSERT INTO api_keys VALUES (?, ?, ?)", (digest, role, time.time()))

    def keys(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(r[0], r[1]) for r in
                    self._db.execute("SELECT digest, role FROM api_keys").fetchall()]

    def key_records(self) -> list[KeyRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT k.digest, k.role, k.created_at, m.value FROM api_keys k LEFT JOIN meta m "
                "ON m.name = ? || k.digest ORDER BY k.created_at", (KEY_USE_STATE,)).fetchall()
        return [KeyRecord(r[0], r[1], float(r[2]), None if r[3] is None else float(r[3]))
                for r in rows]

    def remove_key(self, digest: str) -> bool:
        with self._lock, self._transaction() as db:
            db.execute("DELETE FROM meta WHERE name = ?", (KEY_USE_STATE + digest,))
            return db.execute("DELETE FROM api_keys WHERE digest = ?", (digest,)).rowcount > 0

    def record_key_use(self, used: dict[str, float]) -> None:
        with self._lock, self._transaction() as db:
            db.executemany(
                "INSERT INTO meta SELECT ?, ? WHERE EXISTS (SELECT 1 FROM api_keys WHERE "
                "digest = ?) ON CONFLICT (name) DO UPDATE SET value = "
                "max(CAST(excluded.value AS REAL), CAST(value AS REAL))",
                [(KEY_USE_STATE + d, repr(float(t)), d) for d, t in used.items()])

    def state(self, name: str) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_state(self, name: str, value: Any) -> None:
        with self._lock, self._transaction() as db:
            self._put(db, name, value)

    @staticmethod
    def _put(db: sqlite3.Connection, name: str, value: Any) -> None:
        db.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET "
                   "value = excluded.value", (name, safejson.dumps(value)))

    def delete_before(self, when: float) -> int:
        with self._lock, self._transaction() as db:
            return db.execute("DELETE FROM interactions WHERE decided_at < ?",
                              (when,)).rowcount

    def hold_refit_lease(self) -> bool:
        """The lease is an exclusive ``flock`` on the file ``DB.refit-lease`` beside the
        database, which the operating system releases when the process ends."""
        if self._lease is None:
            fd = os.open(f"{self.path}.refit-lease", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            self._lease = fd
        return True

    def clear(self) -> None:
        with self._lock, self._transaction() as db:
            db.execute("DELETE FROM interactions")
            db.execute("DELETE FROM models")
            db.execute("DELETE FROM meta WHERE name != 'schema_version'")

    def close(self) -> None:
        self._stop.set()
        if self._checkpointer is not None:  # its connection closes first, so that the last
            self._checkpointer.join(5)      # to close removes the WAL and its index
        with self._lock:
            self._db.close()
            if self._lease is not None:
                os.close(self._lease)
                self._lease = None


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""How a PostgreSQL ``db`` setting begins (a libpq connection URL)."""


def is_postgres(db: str | Path) -> bool:
    """Whether the ``db`` setting names a PostgreSQL database rather than an SQLite file."""
    return isinstance(db, str) and db.startswith(POSTGRES_SCHEMES)


def open_storage(db: str | Path, synchronous: str = "normal", pool_size: int = 4,
                 upgrade: bool = False, checkpoint_seconds: float | None = None) -> Storage:
    """The storage the ``db`` setting names: a PostgreSQL URL (``postgresql://...``, see
    :class:`~iglearn.service.postgres.PostgresStorage`; at most ``pool_size`` connections)
    or an SQLite database file (``synchronous``: its synchronous mode; ``checkpoint_seconds``:
    see :class:`SQLiteStorage`). A new database gets the schema; ``upgrade``: also migrate
    an older one (else that is an error)."""
    if is_postgres(db):
        from iglearn.service.postgres import URL_FORM, PostgresStorage, shown_url, url_problem

        problem = url_problem(str(db))
        if problem is not None:
            raise IGLearnError(f"{shown_url(str(db))} is not a PostgreSQL URL ({problem}); "
                               f"write it as {URL_FORM}")
        return PostgresStorage(str(db), pool_size=pool_size, upgrade=upgrade)
    return SQLiteStorage(db, synchronous, checkpoint_seconds=checkpoint_seconds)


def is_new_database(db: str | Path) -> bool:
    """Whether the database the ``db`` setting names has no iglearn schema yet (an SQLite
    file that does not exist; a PostgreSQL database without iglearn's tables), so holds no
    key: read without creating anything."""
    if is_postgres(db):
        from iglearn.service.postgres import has_schema, url_problem

        if url_problem(str(db)) is not None:
            return False  # open_storage names the problem
        return not has_schema(str(db))
    return not os.path.lexists(db)


def database_files(db: Path) -> list[Path]:
    """The files of the SQLite database ``db``: itself, the WAL and its index, a rollback
    journal and the re-fit lease (:meth:`SQLiteStorage.hold_refit_lease`)."""
    return [db, *(Path(f"{db}{end}") for end in ("-wal", "-shm", "-journal", ".refit-lease"))]


def created_or_removed(db: str | Path) -> contextlib.AbstractContextManager[Callable[[], None]]:
    """Within the block, a new SQLite database file ``db`` (one that does not exist yet) is
    removed again, with its companion files (:func:`database_files`), if the block raises:
    a refused start leaves nothing behind. An existing database is left as it is (the block
    closes what it opened: SQLite removes the WAL with the last connection)."""
    from iglearn.files import removed_if_failed

    new = not (is_postgres(db) or os.path.lexists(db))
    return removed_if_failed(database_files(Path(db)) if new else [])


def sqlite_schema_version(path: Path) -> str | None:
    """The schema version iglearn recorded in the SQLite file ``path`` (None: no such file, not
    a database, or none recorded), read without changing the file."""
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as db:
            row = db.execute("SELECT value FROM meta WHERE name = 'schema_version'"
                             ).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def upgrade_database(db: str | Path, adopt: bool = False) -> tuple[int, int]:
    """``iglearn serve db upgrade``: create or migrate the schema of the database ``db``
    names to this iglearn's version; (version before, version after; 0: none). An SQLite
    file that holds another application's tables is refused unless ``adopt``."""
    if is_postgres(db):
        from iglearn.service.postgres import upgrade

        return upgrade(str(db))
    recorded = sqlite_schema_version(Path(db))
    before = 0 if recorded is None else int(recorded)
    SQLiteStorage(db, adopt=adopt).close()
    return before, SCHEMA_VERSION
