"""The page's guards, as plain functions and one small class (no web framework here).

- Access: a fresh random token per run, carried once in the printed URL (as Jupyter does).
  Presenting it opens a session: a random id in a cookie (HttpOnly, SameSite=Strict, Path=/),
  kept only in this process's memory, so a restart logs every browser out.
- CSRF: every session has its own random token, put in every form; a POST without the
  matching one is refused (SameSite=Strict already keeps other sites' requests cookie-less;
  this holds even where a browser ignores SameSite).
- Headers: a strict Content-Security-Policy (nothing but this page's own stylesheet: no
  script, no frame, no external fonts or images, forms post only here), no referrer (the
  token never leaks in a Referer), no caching, no sniffing, no framing.
- Host: bound to loopback, only requests naming a loopback host are served (a DNS-rebinding
  page cannot reach it under another name).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from typing import Optional

COOKIE = "evoclaw_ui"
TOKEN_BYTES = 32            # 256 bits: guessing is hopeless, even on a LAN
MAX_SESSIONS = 64           # browsers logged in at once (each login adds one; oldest go)

CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def same(a: Optional[str], b: Optional[str]) -> bool:
    """Constant-time equality of two secrets (False when either is missing)."""
    if not a or not b:
        return False
    return hmac.compare_digest(a.encode(), b.encode())


class Sessions:
    """The access token of this run and the sessions (cookie id -> CSRF token) it opened."""

    def __init__(self, token: Optional[str] = None):
        self.token = token or new_token()
        self._csrf: dict[str, str] = {}

    def login(self, presented: Optional[str]) -> Optional[str]:
        """A new session id when `presented` is this run's token, else None."""
        if not same(presented, self.token):
            return None
        if len(self._csrf) >= MAX_SESSIONS:
            self._csrf.pop(next(iter(self._csrf)))
        session = secrets.token_urlsafe(TOKEN_BYTES)
        self._csrf[session] = secrets.token_urlsafe(TOKEN_BYTES)
        return session

    def csrf(self, session: Optional[str]) -> Optional[str]:
        """The CSRF token of a live session (None: no such session)."""
        if not session:
            return None
        for known, token in self._csrf.items():
            if same(session, known):
                return token
        return None

    def check_csrf(self, session: Optional[str], presented: Optional[str]) -> bool:
        return same(presented, self.csrf(session))


def cookie_header(session: str) -> str:
    return f"{COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict"


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost (what only this machine reaches)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_allowed(header: Optional[str], loopback_only: bool) -> bool:
    """Whether a request's Host header may be served: any name when the page is bound
    beyond loopback (the owner chose the address), else a loopback name only."""
    if not loopback_only:
        return True
    if not header:
        return False
    name = header
    if name.startswith("["):                      # [::1]:port
        name = name[1:].split("]", 1)[0]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    return is_loopback(name)
