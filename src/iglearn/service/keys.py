"""API keys of the decision service: random secrets shown once, stored only as SHA-256
hashes, each with a role. A request's key (``Authorization: Bearer KEY``) is hashed and
compared with every stored hash in constant time, so neither the comparison's timing nor the
order of the keys tells anything about a key.

A key's id (:func:`key_id`, what ``iglearn serve keys list`` shows and ``keys revoke``
takes) is the start of its hash. A running service re-reads the keys every
:data:`KEY_POLL_SECONDS` (:func:`watch_keys`), so a revoked key is refused within a second
by every replica, and records when each key was last used in memory, written to the
database at the same cadence (one commit for all keys, not one per request)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from iglearn.errors import IGLearnError, check_choice

ROLES = ("client", "admin")
"""client: decide and feedback (and read the model); admin: everything."""
PREFIX = "iglk_"
"""How every key begins (so a leaked key is recognisable)."""
ID_LENGTH = 12
"""Hex digits of a key's hash that make its id."""
KEY_POLL_SECONDS = 0.5
"""How often a running service re-reads the stored keys and records their last use."""

if TYPE_CHECKING:
    from iglearn.service.app import Service
    from iglearn.service.storage import KeyRecord, Storage


def new_key() -> str:
    """A new random key: 256 bits from the operating system's secure source."""
    return PREFIX + secrets.token_urlsafe(32)


def digest(key: str) -> str:
    """The stored form of a key: its SHA-256, hex (keys are random, so no salt is needed)."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def check_role(role: str) -> str:
    """``role``, if it is one of :data:`ROLES`."""
    return check_choice("role", role, ROLES)


def key_id(hashed: str) -> str:
    """The id of the key whose hash is ``hashed``: the hash's first :data:`ID_LENGTH` hex
    digits (it tells nothing about the key)."""
    return hashed[:ID_LENGTH]


def open_key_storage(config_path: str | Path, db: str | None) -> tuple[Storage, str]:
    """The database of the service configured in ``config_path`` (or ``db``), and how to
    name it in messages."""
    from iglearn.service.config import load_config
    from iglearn.service.storage import open_storage

    config = load_config(config_path, learner=False).replace(db=db)
    return open_storage(config.db_path, config.server.synchronous), config.db_shown


def create_key(config_path: str | Path, role: str, db: str | None = None) -> str:
    """Create a key of ``role`` for the service configured in ``config_path`` (its database,
    or ``db``), store its hash, and return the key: the only time it is seen."""
    check_role(role)
    storage, _ = open_key_storage(config_path, db)
    try:
        key = new_key()
        storage.add_key(digest(key), role)
    finally:
        storage.close()
    return key


def list_keys(config_path: str | Path, db: str | None = None) -> list[KeyRecord]:
    """The stored keys of the service configured in ``config_path`` (or ``db``), oldest
    first: hash, role, creation and last use; never a key."""
    storage, _ = open_key_storage(config_path, db)
    try:
        return storage.key_records()
    finally:
        storage.close()


def revoke_key(config_path: str | Path, wanted: str, db: str | None = None) -> KeyRecord:
    """Delete the key whose id is ``wanted`` (or whose hash begins with it) from the
    database of the service configured in ``config_path`` (or ``db``); the key revoked.
    Running services refuse it within :data:`KEY_POLL_SECONDS` and a request's time."""
    storage, shown = open_key_storage(config_path, db)
    try:
        given = wanted.strip().lower()
        found = [k for k in storage.key_records() if given and k.digest.startswith(given)]
        if len(found) != 1:
            how = "no key has" if not found else f"{len(found)} keys have"
            raise IGLearnError(f"{shown}: {how} the id {wanted!r}; see the ids with 'iglearn "
                               f"serve keys list --config {config_path}'")
        storage.remove_key(found[0].digest)
        return found[0]
    finally:
        storage.close()


def sync_keys(service: Service) -> None:
    """Record the last use of the keys used since the previous call (one commit) and
    re-read the stored keys, so that keys revoked since are refused. A database error is
    reported in the operator's log (an unreachable database: as its outage, once), and the
    keys read last stay."""
    from iglearn.service.operator_log import log_error
    from iglearn.service.storage import StorageUnavailable

    used, service.keys_used = service.keys_used, {}
    try:
        if used:
            service.storage.record_key_use(used)
        service.keyring = KeyRing(service.storage.keys())
    except StorageUnavailable:  # the next sync tries again; the outage has its own line
        service.keys_used = used | service.keys_used
    except Exception as e:  # the service goes on; the next sync tries again
        log_error(service.config.server.log_format, "cannot sync the API keys", e)


async def watch_keys(service: Service) -> None:
    """:func:`sync_keys` every :data:`KEY_POLL_SECONDS` (in a thread: it reads the
    database) until cancelled."""
    import asyncio

    import anyio

    while True:
        await asyncio.sleep(KEY_POLL_SECONDS)
        await anyio.to_thread.run_sync(sync_keys, service)


class KeyRing:
    """The stored keys' hashes and roles, and the check of a presented key."""

    def __init__(self, stored: Iterable[tuple[str, str]]):
        self._roles = {bytes.fromhex(h): (h.lower(), role) for h, role in stored}

    def __len__(self) -> int:
        return len(self._roles)

    def match(self, key: str | None) -> tuple[str, str] | None:
        """The hash (hex) and role of ``key``, or None when it matches no stored key. The
        presented key's SHA-256 is looked up among the stored ones: what a lookup's timing
        can tell is about that hash, which no one can steer towards a stored one without
        the key, never about the key's characters (the argument that lets servers compare
        password hashes directly)."""
        if not key:
            return None
        return self._roles.get(hashlib.sha256(key.encode("utf-8", "surrogateescape")).digest())
