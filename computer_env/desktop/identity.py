"""Telling a desktop's own guest server from an impersonator on its port.

A process inside a desktop could take the server's port once the server is gone and answer the
harness itself. The real server holds the session's secret (its bearer token, which nothing in
the desktop can read); asked ``POST /identity`` with a fresh nonce it answers :func:`proof`, an
HMAC of the nonce under that secret. The question carries no token (an impersonator must not
learn it from the asking), so the route answers without one.

Standard library only: the guest server imports it too.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

PATH = "/identity"
_CONTEXT = b"holo-desktop-identity\0"
NONCE_BYTES = 32


def new_nonce() -> str:
    """A fresh challenge (hex)."""
    return secrets.token_hex(NONCE_BYTES)


def proof(token: str, nonce: str) -> str:
    """The answer to ``nonce`` that only a holder of ``token`` can give (hex)."""
    return hmac.new(token.encode(), _CONTEXT + nonce.encode(), hashlib.sha256).hexdigest()


def valid_nonce(nonce: object) -> bool:
    """A nonce the server agrees to prove: hex, 32 to 128 characters."""
    return (
        isinstance(nonce, str)
        and 32 <= len(nonce) <= 128
        and all(c in "0123456789abcdef" for c in nonce)
    )


def proven(token: str, nonce: str, answer: object) -> bool:
    """Whether ``answer`` is the proof of ``nonce`` under ``token``."""
    return isinstance(answer, str) and hmac.compare_digest(answer, proof(token, nonce))


__all__ = ["NONCE_BYTES", "PATH", "new_nonce", "proof", "proven", "valid_nonce"]
