"""API keys of the decision service: random secrets shown once, stored only as SHA-256
hashes, each with a role. A request's key (``Authorization: Bearer KEY``) is hashed and
compared with every stored hash in constant time, so neither the comparison's timing nor the
order of the keys tells anything about a key."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from pathlib import Path

from iglearn.errors import IGLearnError

ROLES = ("client", "admin")
"""client: decide and feedback (and read the model); admin: everything."""
PREFIX = "iglk_"
"""How every key begins (so a leaked key is recognisable)."""


def new_key() -> str:
    """A new random key: 256 bits from the operating system's secure source."""
    return PREFIX + secrets.token_urlsafe(32)


def digest(key: str) -> str:
    """The stored form of a key: its SHA-256, hex (keys are random, so no salt is needed)."""
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def check_role(role: str) -> str:
    """``role``, if it is one of :data:`ROLES`."""
    if role not in ROLES:
        raise IGLearnError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
    return role


def create_key(config_path: str | Path, role: str, db: str | None = None) -> str:
    """Create a key of ``role`` for the service configured in ``config_path`` (its database,
    or ``db``), store its hash, and return the key: the only time it is seen."""
    from iglearn.service.config import load_config
    from iglearn.service.storage import open_storage

    config = load_config(config_path).replace(db=db)
    check_role(role)
    storage = open_storage(config.db_path, config.server.synchronous)
    try:
        key = new_key()
        storage.add_key(digest(key), role)
    finally:
        storage.close()
    return key


class KeyRing:
    """The stored keys' hashes and roles, and the check of a presented key."""

    def __init__(self, stored: Iterable[tuple[str, str]]):
        self._keys = [(bytes.fromhex(h), role) for h, role in stored]

    def __len__(self) -> int:
        return len(self._keys)

    def role(self, key: str | None) -> str | None:
        """The role of ``key``, or None when it matches no stored key. Every stored hash is
        compared (``hmac.compare_digest``), whichever matches."""
        if not key:
            return None
        presented = bytes.fromhex(digest(key))
        found = None
        for stored, role in self._keys:
            if hmac.compare_digest(stored, presented):
                found = role
        return found
