"""Who may do what on ``arag serve``: scoped tokens, the route → (index, scope) rule, and the audit log.

Tokens (``arag token add NAME --index a --scope ask``) are random (256 bits) and stored only as their SHA-256 in a
JSON file readable by its owner alone (0600, replaced atomically). A request offers a token (``Authorization:
Bearer``, ``?token=`` or the page's cookie); its hash is compared with every stored hash in constant time.

Scopes, each including the one before:

=======  ===========================================================================================
read     the index's manifest, keyword/semantic search, chunk reads, tool calls, export, MCP, embeddings
ask      questions (``/ask``, ``/ask/stream``) and conversations
admin    every index, whatever the token lists, and the evaluation runs (``/api/runs``, ``/api/compare``)
=======  ===========================================================================================

A token sees only its indexes: any route of another index answers 404, exactly as an index that does not exist,
and ``/api/indexes`` lists its own. The audit log (JSON Lines) records every request: time, token name, method,
route (without its query string, which may hold a token), index, status and milliseconds; never a token, and
never a question's text unless ``server.audit_questions`` is on.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from arag.errors import ConfigError, InputError

Scope = Literal["read", "ask", "admin"]
SCOPES: tuple[Scope, ...] = ("read", "ask", "admin")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # token and index names
TOKEN_PREFIX = "arag_"
MAX_OFFERED = 4096  # longer "tokens" are not hashed at all


def default_tokens_file() -> Path:
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "arag" / "tokens.json"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: a token's name, its scope and its indexes (``None``: every index)."""

    name: str
    scope: Scope
    indexes: frozenset[str] | None

    def may(self, needed: Scope, index: str | None) -> bool:
        if SCOPES.index(self.scope) < SCOPES.index(needed):
            return False
        return index is None or self.scope == "admin" or self.indexes is None or index in self.indexes

    def sees(self, index: str) -> bool:
        return self.scope == "admin" or self.indexes is None or index in self.indexes


ANONYMOUS = Principal("-", "admin", None)  # a server without tokens (loopback only)


@dataclass
class TokenEntry:
    name: str
    sha256: str
    scope: Scope
    indexes: list[str]
    created: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))


class TokenFile:
    """The tokens of a server, in one JSON file (0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def entries(self) -> list[TokenEntry]:
        if not self.path.exists():
            return []
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            return [TokenEntry(**entry) for entry in raw["tokens"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"the token file {self.path} cannot be read: {exc}") from None

    def add(self, name: str, scope: str, indexes: list[str]) -> str:
        """A new token (returned once, stored only as its hash)."""
        if not NAME.match(name):
            raise InputError(
                f"token name {name!r}: letters, digits, '_', '.', '-' (at most 64), a letter or digit first"
            )
        if scope not in SCOPES:
            raise InputError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
        for index in indexes:
            if not NAME.match(index):
                raise InputError(f"index name {index!r}: letters, digits, '_', '.', '-'")
        if not indexes and scope != "admin":
            raise InputError("name the indexes the token may use (--index NAME, repeatable); only admin sees all")
        entries = self.entries()
        if any(entry.name == name for entry in entries):
            raise InputError(f"a token named {name!r} exists; revoke it first (arag token revoke {name})")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        entries.append(TokenEntry(name, _digest(token), scope, sorted(set(indexes))))
        self._write(entries)
        return token

    def revoke(self, name: str) -> bool:
        entries = self.entries()
        kept = [entry for entry in entries if entry.name != name]
        if len(kept) == len(entries):
            return False
        self._write(kept)
        return True

    def _write(self, entries: list[TokenEntry]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)  # created 0600
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump({"tokens": [asdict(entry) for entry in entries]}, handle, indent=1)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise


class Access:
    """The server's check: which principal a request's token names (or None: refused)."""

    RELOAD_EVERY_S = 2.0  # a token added or revoked takes effect this soon on a running server

    def __init__(self, entries: list[TokenEntry], legacy_token: str | None = None) -> None:
        self._entries = [(bytes.fromhex(entry.sha256), entry) for entry in entries]
        self._legacy = _digest(legacy_token) if legacy_token else None  # server.token: admin on every index
        self.enabled = bool(entries) or legacy_token is not None
        self._file: TokenFile | None = None
        self._seen: tuple[float, int] | None = None  # the file's (mtime, size) when read
        self._checked = 0.0

    @classmethod
    def load(cls, tokens_file: Path | None, legacy_token: str | None) -> Access:
        """From the token file, reread when it changes (so a server with tokens stays one that needs them)."""
        file = TokenFile(tokens_file) if tokens_file else None
        access = cls(file.entries() if file else [], legacy_token)
        access._file, access._seen = file, _stamp(tokens_file)
        access.enabled = access.enabled or (file is not None and file.path.exists())
        return access

    def _reload(self) -> None:
        now = time.monotonic()
        if self._file is None or now - self._checked < self.RELOAD_EVERY_S:
            return
        self._checked = now
        stamp = _stamp(self._file.path)
        if stamp != self._seen:
            try:
                entries = self._file.entries()
            except ConfigError:
                return  # a file caught mid-replace by another writer: keep the tokens read before
            self._entries = [(bytes.fromhex(entry.sha256), entry) for entry in entries]
            self._seen = stamp
            self.enabled = True

    def principal(self, offered: list[str]) -> Principal | None:
        self._reload()
        if not self.enabled:
            return ANONYMOUS
        found: Principal | None = None
        for token in offered[:4]:
            if not token or len(token) > MAX_OFFERED:
                continue
            digest = bytes.fromhex(_digest(token))
            # every stored hash is compared (no early exit), each in constant time
            for stored, entry in self._entries:
                if hmac.compare_digest(digest, stored) and found is None:
                    indexes = None if entry.scope == "admin" and not entry.indexes else frozenset(entry.indexes)
                    found = Principal(entry.name, entry.scope, indexes)
            if self._legacy is not None and hmac.compare_digest(digest, bytes.fromhex(self._legacy)) and not found:
                found = Principal("server-token", "admin", None)
        return found


def _stamp(path: Path | None) -> tuple[float, int] | None:
    try:
        info = path.stat() if path else None
    except OSError:
        return None
    return (info.st_mtime, info.st_size) if info else None


@dataclass(frozen=True)
class Route:
    """What a request path asks for: the scope it needs and the index it touches (None: no index)."""

    scope: Scope
    index: str | None


def route_of(path: str, default_index: str) -> Route:
    """The rule of the table in this module's docstring, from the path alone (before any handler runs)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "indexes"]:
        if len(parts) == 2:
            return Route("read", None)  # the list, filtered to what the token sees
        return Route(_scope_of(parts[3:]), parts[2])
    if parts[:1] == ["mcp"]:
        return Route("read", default_index)
    if parts[:1] == ["api"] and len(parts) > 1:
        if parts[1] in ("runs", "compare"):
            return Route("admin", None)
        if parts[1] == "docs":
            return Route("read", None)
        return Route(_scope_of(parts[1:]), default_index)
    return Route("read", None)  # the page and its static files


def _scope_of(rest: list[str]) -> Scope:
    return "ask" if rest[:1] in (["ask"], ["conversations"]) else "read"


class AuditLog:
    """One JSON line per request, appended (and flushed) by one writer at a time."""

    def __init__(self, path: Path, questions: bool = False) -> None:
        self.path, self.questions = path, questions
        path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = path.open("a", encoding="utf-8")
        os.chmod(path, 0o600)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        with self._lock:
            self._handle.write(line)
            self._handle.flush()

    def close(self) -> None:
        self._handle.close()
