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

A token reads the documents of its indexes that are open to everyone and those its groups may read
(``arag token add NAME --group hr``; :mod:`arag.principals`): every route, the MCP tools and the questions see only
those, and a document it may not read is answered as one that does not exist (the audit log records the denial).
An admin token without groups, a token made with ``--all-documents``, ``server.token`` and a server without tokens
read every document.

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
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from arag.errors import ConfigError, InputError
from arag.principals import Principal
from arag.settings import JWTSettings

if TYPE_CHECKING:  # only annotated here: the token commands need not load the index's modules
    from arag.index import Index

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
class Caller:
    """Who a request comes from: a token's name, its scope, its indexes (``None``: every index) and the reader of
    the documents (:class:`arag.principals.Principal`, its groups; ``None``: every document, as the local user)."""

    name: str
    scope: Scope
    indexes: frozenset[str] | None
    reader: Principal | None = None

    def may(self, needed: Scope, index: str | None) -> bool:
        if SCOPES.index(self.scope) < SCOPES.index(needed):
            return False
        return index is None or self.scope == "admin" or self.indexes is None or index in self.indexes

    def sees(self, index: str) -> bool:
        return self.scope == "admin" or self.indexes is None or index in self.indexes


ANONYMOUS = Caller("-", "admin", None)  # a server without tokens (loopback only)

# the documents the current request named and may not read: set per request by the server's guard, filled by the
# index views made for its caller (a context variable reaches the worker threads its operations run in)
DENIALS: ContextVar[list[str] | None] = ContextVar("arag_denials", default=None)


def record_denial(doc_id: str) -> None:
    denied = DENIALS.get()
    if denied is not None:
        denied.append(doc_id)


def caller_view(index: Index, scope: Mapping[str, Any]) -> Index:
    """The index as the caller the guard named in a request's ``scope`` reads it (its groups' documents and the
    open ones; the index itself for a caller that reads every document); the documents it is refused by name go to
    the request's audit line."""
    reader = getattr(scope.get("arag.caller"), "reader", None)
    return index if reader is None else index.as_principal(reader, record_denial)


@dataclass
class TokenEntry:
    name: str
    sha256: str
    scope: Scope
    indexes: list[str]
    created: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    groups: list[str] = field(default_factory=list)  # the documents' groups it reads (arag.principals)
    all_documents: bool = False  # reads every document, whatever its access (admin tokens without groups do)

    def caller(self) -> Caller:
        indexes = None if self.scope == "admin" and not self.indexes else frozenset(self.indexes)
        everything = self.all_documents or (self.scope == "admin" and not self.groups)
        return Caller(self.name, self.scope, indexes, None if everything else Principal.of(self.name, self.groups))


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
            entries = [TokenEntry(**entry) for entry in raw["tokens"]]
            for entry in entries:
                entry.caller()  # a group name that cannot be one is the file's fault, found when it is read
            return entries
        except (OSError, ValueError, KeyError, TypeError, InputError) as exc:
            raise ConfigError(f"the token file {self.path} cannot be read: {exc}") from None

    def add(
        self, name: str, scope: str, indexes: list[str], groups: list[str] | None = None, all_documents: bool = False
    ) -> str:
        """A new token (returned once, stored only as its hash) that reads the documents open to all and those of
        ``groups`` (every document with ``all_documents``, or an admin token given no groups)."""
        if not NAME.match(name):
            raise InputError(
                f"token name {name!r}: letters, digits, '_', '.', '-' (at most 64), a letter or digit first"
            )
        if scope not in SCOPES:
            raise InputError(f"scope {scope!r}: one of {', '.join(SCOPES)}")
        for index in indexes:
            if not NAME.match(index):
                raise InputError(f"index name {index!r}: letters, digits, '_', '.', '-'")
        checked = sorted(Principal.of(name, groups or []).groups)  # PrincipalError names a bad group
        if all_documents and checked:
            raise InputError("a token reads every document (--all-documents) or its groups' (--group), not both")
        if not indexes and scope != "admin":
            raise InputError("name the indexes the token may use (--index NAME, repeatable); only admin sees all")
        entries = self.entries()
        if any(entry.name == name for entry in entries):
            raise InputError(f"a token named {name!r} exists; revoke it first (arag token revoke {name})")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        entries.append(TokenEntry(name, _digest(token), scope, sorted(set(indexes)), groups=checked,
                                  all_documents=all_documents))  # fmt: skip
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


class JWTVerifier:
    """Bearer JWTs of an identity provider (``server.jwt``), checked offline against the public keys of its JWKS
    file (reread when it changes): the signature with an accepted public-key algorithm and the key its ``kid``
    names, ``exp`` (required) and ``nbf`` with a leeway, ``iss`` and ``aud`` when configured. The caller is named
    ``jwt:<name claim>`` and reads the documents of its group claim (a list, or names separated by commas)."""

    def __init__(self, settings: JWTSettings) -> None:
        if settings.jwks_file is None:
            raise ConfigError("server.jwt.jwks_file is not set")
        self.settings, self.path = settings, settings.jwks_file
        self._keys: dict[str | None, Any] = {}
        self._seen: tuple[float, int] | None = None
        self._checked = 0.0
        self._load()

    def _load(self) -> None:
        import jwt

        now = time.monotonic()
        if self._seen is not None and now - self._checked < Access.RELOAD_EVERY_S:
            return  # a rotated key set takes effect this soon, without a stat on every request
        self._checked = now
        stamp = _stamp(self.path)
        if stamp is not None and stamp == self._seen:
            return
        try:
            keys = jwt.PyJWKSet.from_json(self.path.read_text(encoding="utf-8")).keys
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            if self._seen is not None:
                return  # a file caught mid-replace: keep the keys read before
            raise ConfigError(f"the JWKS file {self.path} cannot be read: {exc}") from None
        self._keys = {key.key_id: key for key in keys}
        self._seen = stamp

    def caller(self, token: str) -> Caller | None:
        """The caller a valid JWT names; None for anything else (a wrong signature, key, algorithm, issuer,
        audience, an expired token, a group that cannot be one)."""
        import jwt

        self._load()
        try:
            header = jwt.get_unverified_header(token)
            kid = header.get("kid")
            only = list(self._keys.values()) if len(self._keys) == 1 else [None]  # no kid: the one key, if one
            key = self._keys.get(kid) if kid is not None else only[0]
            if key is None or header.get("alg") not in self.settings.algorithms:
                return None
            claims = jwt.decode(
                token, key, algorithms=self.settings.algorithms, audience=self.settings.audience,
                issuer=self.settings.issuer, leeway=self.settings.leeway_s, options={"require": ["exp"]},
            )  # fmt: skip
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            return None
        name, groups = claims.get(self.settings.name_claim), claims.get(self.settings.group_claim, [])
        if not isinstance(name, str) or not name.strip() or not isinstance(groups, str | list):
            return None
        try:
            reader = Principal.of(
                f"jwt:{name.strip()[:128]}", groups.split(",") if isinstance(groups, str) else map(str, groups)
            )
        except InputError:
            return None
        indexes = frozenset(self.settings.indexes) if self.settings.indexes else None
        return Caller(reader.name, self.settings.scope, indexes, reader)


class Access:
    """The server's check: which caller a request's token names (or None: refused)."""

    RELOAD_EVERY_S = 2.0  # a token added or revoked takes effect this soon on a running server

    def __init__(
        self, entries: list[TokenEntry], legacy_token: str | None = None, jwt: JWTSettings | None = None
    ) -> None:
        self._entries = [(bytes.fromhex(entry.sha256), entry) for entry in entries]
        self._legacy = _digest(legacy_token) if legacy_token else None  # server.token: admin on every index
        self._jwt = JWTVerifier(jwt) if jwt is not None and jwt.jwks_file is not None else None
        self.enabled = bool(entries) or legacy_token is not None or self._jwt is not None
        self._file: TokenFile | None = None
        self._seen: tuple[float, int] | None = None  # the file's (mtime, size) when read
        self._checked = 0.0

    @classmethod
    def load(cls, tokens_file: Path | None, legacy_token: str | None, jwt: JWTSettings | None = None) -> Access:
        """From the token file, reread when it changes (so a server with tokens stays one that needs them), and
        the JWT settings (``server.jwt``: its JWKS file, when set)."""
        file = TokenFile(tokens_file) if tokens_file else None
        access = cls(file.entries() if file else [], legacy_token, jwt)
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

    def caller(self, offered: list[str]) -> Caller | None:
        self._reload()
        if not self.enabled:
            return ANONYMOUS
        found: Caller | None = None
        for token in offered[:4]:
            if not token or len(token) > MAX_OFFERED:
                continue
            digest = bytes.fromhex(_digest(token))
            # every stored hash is compared (no early exit), each in constant time
            for stored, entry in self._entries:
                if hmac.compare_digest(digest, stored) and found is None:
                    found = entry.caller()
            if self._legacy is not None and hmac.compare_digest(digest, bytes.fromhex(self._legacy)) and not found:
                found = Caller("server-token", "admin", None)
            if found is None and self._jwt is not None and token.count(".") == 2 and not token.startswith(TOKEN_PREFIX):
                found = self._jwt.caller(token)
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
        if parts[1] in ("docs", "me"):
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
