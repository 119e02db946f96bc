"""An app's sign-in tokens, the way an identity provider makes them: keys made with ``cryptography``, a JWKS file in the
format Firebase Auth, Auth0 and Supabase publish, and JWTs minted by PyJWT — never by tipsd's own code.
"""

from __future__ import annotations

import base64
import json
import pathlib
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "tipsd-tests"
ISSUER = "https://auth.example.test/"


def _b64(number: int, length: int | None = None) -> str:
    raw = number.to_bytes(length or (number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Issuer:
    """Keys (RSA ``rsa-1``, EC P-256 ``ec-1``, an HS256 secret) and the files tipsd reads them from."""

    def __init__(self, directory: pathlib.Path):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.secret = base64.urlsafe_b64encode(__import__("os").urandom(32)).rstrip(b"=")
        self.jwks_path = directory / "jwks.json"
        self.secret_path = directory / "jwt-secret"
        self.write_jwks()
        self.secret_path.write_bytes(self.secret + b"\n")
        # tipsd refuses a secret file others may read (as it refuses such an admin token file).
        self.secret_path.chmod(0o600)

    def write_jwks(self, extra: list[dict] | None = None) -> None:
        rsa_numbers = self.rsa.public_key().public_numbers()
        ec_numbers = self.ec.public_key().public_numbers()
        keys = [
            {
                "kty": "RSA",
                "kid": "rsa-1",
                "use": "sig",
                "alg": "RS256",
                "n": _b64(rsa_numbers.n),
                "e": _b64(rsa_numbers.e),
            },
            {
                "kty": "EC",
                "kid": "ec-1",
                "use": "sig",
                "alg": "ES256",
                "crv": "P-256",
                "x": _b64(ec_numbers.x, 32),
                "y": _b64(ec_numbers.y, 32),
            },
        ] + (extra or [])
        self.jwks_path.write_text(json.dumps({"keys": keys}))

    def rsa_public_pem(self) -> bytes:
        return self.rsa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def token(
        self,
        sub: str | None,
        *,
        alg: str = "RS256",
        lifetime: float = 3600,
        now: float | None = None,
        audience: str | None = AUDIENCE,
        issuer: str | None = ISSUER,
        nbf: float | None = None,
        key=None,
        kid: str | None = None,
        claims: dict | None = None,
    ) -> str:
        now = time.time() if now is None else now
        payload: dict = {"iat": int(now), "exp": int(now + lifetime)}
        if sub is not None:
            payload["sub"] = sub
        if audience is not None:
            payload["aud"] = audience
        if issuer is not None:
            payload["iss"] = issuer
        if nbf is not None:
            payload["nbf"] = int(nbf)
        payload.update(claims or {})
        headers = {}
        if alg.startswith("RS"):
            signing_key, headers["kid"] = key or self.rsa, kid or "rsa-1"
        elif alg.startswith("ES"):
            signing_key, headers["kid"] = key or self.ec, kid or "ec-1"
        elif alg.startswith("HS"):
            signing_key = key if key is not None else self.secret
            if kid:
                headers["kid"] = kid
        else:
            signing_key = None
        return jwt.encode(payload, signing_key, algorithm=alg, headers=headers or None)
