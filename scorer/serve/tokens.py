"""Team and admin tokens: random, shown once, stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import hmac
import secrets


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe (no default credentials anywhere)."""
    return secrets.token_urlsafe(32)


def digest(token: str) -> str:
    """What the store keeps of a token: a leaked database gives no working token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def matches(token: str, stored_sha256: str) -> bool:
    """Whether `token` is the one stored, compared in constant time."""
    return hmac.compare_digest(digest(token), stored_sha256)
