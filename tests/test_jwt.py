"""Bearer JWTs from an identity provider (issue 51): verified offline against a JWKS file; the subject names the
caller and the group claim decides which documents it reads; every way a JWT can be wrong is a 401, never a 500."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arag.corpus.build import build_index
from arag.errors import ConfigError
from arag.index import Index
from arag.serve.access import Access, AuditLog
from arag.serve.http import create_app
from arag.settings import JWTSettings, Settings
from conftest import FUZZ_SCALE, fake_settings
from support.live_server import LiveServer

ISSUER, AUDIENCE = "https://id.example.org", "a-rag"
SIGNING = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # a key the server does not know
EC_KEY = ec.generate_private_key(ec.SECP256R1())


def _jwks(path: Path) -> Path:
    keys = []
    for kid, key, algorithm in (
        ("rsa-1", SIGNING, jwt.algorithms.RSAAlgorithm),
        ("ec-1", EC_KEY, jwt.algorithms.ECAlgorithm),
    ):
        jwk = json.loads(algorithm.to_jwk(key.public_key()))
        keys.append({**jwk, "kid": kid, "use": "sig"})
    path.write_text(json.dumps({"keys": keys}), encoding="utf-8")
    return path


def _token(
    claims: dict[str, Any] | None = None, key: Any = SIGNING, kid: str = "rsa-1", algorithm: str = "RS256"
) -> str:
    now = int(time.time())
    body = {"sub": "alice", "groups": ["hr"], "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 600}
    body.update(claims or {})
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=algorithm, headers={"kid": kid})


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("jwt")
    docs = root / "docs"
    docs.mkdir()
    (docs / "salaries.md").write_text("---\naccess: [hr]\n---\nSalaries rise 3 percent in 2026.\n")
    (docs / "budget.md").write_text("---\naccess: [finance]\n---\nThe budget for 2026 is 4 million.\n")
    (docs / "handbook.md").write_text("The handbook covers travel in 2026.\n")
    build_index([docs], root / "idx", fake_settings())
    index = Index.open(root / "idx", threads=1)
    jwt_settings = JWTSettings(jwks_file=_jwks(root / "jwks.json"), issuer=ISSUER, audience=AUDIENCE)
    audit = AuditLog(root / "audit.jsonl")
    app = create_app(index, Settings(), None, access=Access.load(None, None, jwt_settings), audit=audit)
    live = LiveServer(app)
    yield {"url": live.url, "audit": root / "audit.jsonl"}
    live.close()
    audit.close()
    index.close()


def _found(url: str, token: str) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(
        f"{url}/api/search/keyword", json={"keywords": ["2026"], "top_k": 10}, headers=headers, timeout=30
    )


def _documents(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return sorted(hit["chunk_id"].split("#")[0] for hit in response.json())


def test_a_valid_jwt_reads_its_groups_documents_and_is_named_in_the_audit_log(server: dict[str, Any]) -> None:
    url = server["url"]
    assert _documents(_found(url, _token())) == ["docs/handbook.md", "docs/salaries.md"]
    as_text = _token({"sub": "bob", "groups": "finance, hr"})  # a group claim as one text
    assert _documents(_found(url, as_text)) == ["docs/budget.md", "docs/handbook.md", "docs/salaries.md"]
    no_groups = _token({"sub": "carol", "groups": None}, key=EC_KEY, kid="ec-1", algorithm="ES256")
    assert _documents(_found(url, no_groups)) == ["docs/handbook.md"]
    me = httpx.get(f"{url}/api/me", headers={"Authorization": f"Bearer {as_text}"}, timeout=30).json()
    assert me == {"name": "jwt:bob", "scope": "ask", "indexes": None, "groups": ["finance", "hr"]}
    names = {json.loads(line)["token"] for line in server["audit"].read_text().splitlines()}
    assert {"jwt:alice", "jwt:bob", "jwt:carol"} <= names
    assert not any(_token()[:40] in line for line in server["audit"].read_text().splitlines())


def test_every_wrong_jwt_is_refused(server: dict[str, Any]) -> None:
    now = int(time.time())
    public_pem = SIGNING.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    wrong = {
        "expired": _token({"exp": now - 3600}),
        "not yet valid": _token({"nbf": now + 3600}),
        "no expiry": _token({"exp": None}),
        "another issuer": _token({"iss": "https://evil.example.org"}),
        "another audience": _token({"aud": "someone-else"}),
        "an unknown key": _token(key=OTHER),
        "an unknown kid": _token(kid="rsa-9"),
        "no subject": _token({"sub": None}),
        "a group that cannot be one": _token({"groups": ["h r"]}),
        "groups as an object": _token({"groups": {"hr": True}}),
        "alg none": jwt.encode({"sub": "x", "exp": now + 60, "iss": ISSUER, "aud": AUDIENCE}, None, algorithm="none"),
        "HS256 keyed with the public key": _forged_hs256(public_pem, now),
        "a tampered payload": _tampered(_token()),
    }
    for why, token in wrong.items():
        assert _found(server["url"], token).status_code == 401, why


def _forged_hs256(public_pem: bytes, now: int) -> str:
    """The algorithm-confusion attack: a token signed with HMAC whose secret is the server's public key."""
    import base64
    import hashlib
    import hmac

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    claims = {"sub": "mallory", "groups": ["hr", "finance"], "iss": ISSUER, "aud": AUDIENCE, "exp": now + 600}
    payload = b64(json.dumps(claims).encode())
    signature = hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def _tampered(token: str) -> str:
    import base64

    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["groups"] = ["hr", "finance"]
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def _base64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).decode()


@settings(max_examples=60 * FUZZ_SCALE, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.text(max_size=40) | st.binary(max_size=40).map(_base64), min_size=3, max_size=3))
def test_fuzzed_jwts_are_refused_cleanly(server: dict[str, Any], parts: list[str]) -> None:
    # a header's bytes: no control bytes, and no space at its end (HTTP trims it; the client refuses to send it)
    token = bytes(b for b in ".".join(parts).encode("latin-1", "ignore") if 0x20 <= b != 0x7F)
    headers = {"Authorization": (b"Bearer " + token).rstrip(b" ")}
    body = {"keywords": ["2026"], "top_k": 10}
    response = httpx.post(f"{server['url']}/api/search/keyword", json=body, headers=headers, timeout=30)
    assert response.status_code == 401, response.text


def test_a_jwks_file_or_algorithm_that_cannot_be_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"the JWKS file .* cannot be read"):
        Access.load(None, None, JWTSettings(jwks_file=tmp_path / "bad.json"))
    with pytest.raises(ConfigError, match="cannot be read"):
        Access.load(None, None, JWTSettings(jwks_file=tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="only public-key algorithms"):
        JWTSettings(algorithms=["HS256"])
    assert not Access.load(None, None, JWTSettings()).enabled  # no JWKS file: JWTs are not accepted at all
