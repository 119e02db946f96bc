#!/usr/bin/env python3
"""Mints the tokens TipsAuthTests verifies, with PyJWT and keys made by `cryptography` — never by tipsd's code.

Usage: mint_tokens.py OUTPUT_DIRECTORY

Writes, into OUTPUT_DIRECTORY (fresh keys on every run):
  secret           the HMAC secret, as `--jwt-secret-file` reads it (with a trailing newline)
  jwks.json        the public keys as an issuer publishes them: RSA 2048 (kid rsa-a, rsa-b), EC P-256 (ec-a),
                   P-384 (ec-384), P-521 (ec-521), plus a `use: enc` key and an Ed25519 (OKP) key, which are skipped
  rsa-a.pem        rsa-a's public key as PEM (SubjectPublicKeyInfo), for the algorithm-confusion tokens
  rsa-1024.jwk     a 1024-bit RSA public key as a JWK (too small: refused)
  tokens.json      {"now": N, "tokens": {name: token}}, every token for the instant N

Expired and not-yet-valid tokens use fixed instants around N, so the test verifies them with an injected `now`.
"""
import hmac
import hashlib
import json
import os
import sys

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from jwt.utils import base64url_encode

NOW = 1_700_000_000
HOUR = 3600
SECRET = b"tipsd-test-secret-" + b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"[:46]
# One byte different.
WRONG_SECRET = SECRET[:-1] + b"!"
AUDIENCE = "tipsd-app"
ISSUER = "https://issuer.test/"


def rsa_key(bits=2048):
    return rsa.generate_private_key(public_exponent=65537, key_size=bits)


def jwk(public_key, kid, algorithm, use="sig"):
    maker = RSAAlgorithm if isinstance(public_key, rsa.RSAPublicKey) else ECAlgorithm
    entry = maker.to_jwk(public_key, as_dict=True)
    entry.update({"kid": kid, "use": use, "alg": algorithm})
    return entry


def claims(**overrides):
    base = {"sub": "user-1", "aud": AUDIENCE, "iss": ISSUER, "iat": NOW - 60, "exp": NOW + HOUR}
    for name, value in overrides.items():
        if value is None:
            base.pop(name, None)
        else:
            base[name] = value
    return base


def hmac_token(header, payload, key, digest=hashlib.sha256):
    """A token PyJWT refuses to make (an HMAC keyed with a public key, a crit header): its parts encoded with
    PyJWT's own base64url, the MAC by Python's hmac module."""
    signing_input = (
        base64url_encode(json.dumps(header, separators=(",", ":")).encode())
        + b"."
        + base64url_encode(json.dumps(payload, separators=(",", ":")).encode())
    )
    signature = hmac.new(key, signing_input, digest).digest()
    return (signing_input + b"." + base64url_encode(signature)).decode()


def main(directory):
    os.makedirs(directory, exist_ok=True)
    rsa_a, rsa_b, rsa_stranger = rsa_key(), rsa_key(), rsa_key()
    ec_a, ec_stranger = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ec_384, ec_521 = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP521R1())
    encryption = rsa_key()
    edwards = ed25519.Ed25519PrivateKey.generate().public_key()

    okp = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(edwards))
    okp.update({"kid": "ed-1", "use": "sig"})
    keys = [
        jwk(rsa_a.public_key(), "rsa-a", "RS256"),
        jwk(ec_a.public_key(), "ec-a", "ES256"),
        jwk(encryption.public_key(), "enc-1", "RSA-OAEP", use="enc"),
        okp,
        jwk(rsa_b.public_key(), "rsa-b", "RS256"),
        jwk(ec_384.public_key(), "ec-384", "ES384"),
        jwk(ec_521.public_key(), "ec-521", "ES512"),
    ]
    # rsa-b verifies RS256, RS384 and RS512: its JWK names no alg.
    del keys[4]["alg"]
    with open(os.path.join(directory, "jwks.json"), "w") as out:
        json.dump({"keys": keys}, out, indent=2)
    with open(os.path.join(directory, "secret"), "wb") as out:
        out.write(SECRET + b"\n")
    pem = rsa_a.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    der = rsa_a.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    pkcs1 = rsa_a.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1)
    with open(os.path.join(directory, "rsa-a.pem"), "wb") as out:
        out.write(pem)
    with open(os.path.join(directory, "rsa-1024.jwk"), "w") as out:
        json.dump(jwk(rsa_key(1024).public_key(), "rsa-small", "RS256"), out)

    def hs(payload, algorithm="HS256", key=SECRET, headers=None):
        return jwt.encode(payload, key, algorithm=algorithm, headers=headers)

    def signed(payload, key, kid, algorithm, headers=None):
        return jwt.encode(payload, key, algorithm=algorithm, headers={"kid": kid, **(headers or {})})

    tokens = {
        # Accepted.
        "hs256": hs(claims()),
        "hs384": hs(claims(), "HS384"),
        "hs512": hs(claims(), "HS512"),
        "rs256": signed(claims(sub="auth0|64f0c0ffee"), rsa_a, "rsa-a", "RS256"),
        "rs256-b": signed(claims(sub="google-oauth2|108001234567890"), rsa_b, "rsa-b", "RS256"),
        "rs384-b": signed(claims(), rsa_b, "rsa-b", "RS384"),
        "rs512-b": signed(claims(), rsa_b, "rsa-b", "RS512"),
        "es256": signed(claims(sub="5f0c7a52-2d1b-4c1e-9a3e-0b1e6f3d9c11"), ec_a, "ec-a", "ES256"),
        "es384": signed(claims(), ec_384, "ec-384", "ES384"),
        "es512": signed(claims(), ec_521, "ec-521", "ES512"),
        "aud-array": hs(claims(aud=["other-app", AUDIENCE])),
        "float-times": hs(claims(exp=NOW + 0.5, iat=NOW - 0.25)),
        "no-optional-claims": hs({"sub": "user-1", "exp": NOW + HOUR}),
        "nbf": hs(claims(nbf=NOW + 100)),
        "iat-future": hs(claims(iat=NOW + 100)),
        "exp-now": hs(claims(exp=NOW)),
        "typ-at-jwt": signed(claims(), rsa_a, "rsa-a", "RS256", headers={"typ": "at+jwt"}),
        "firebase-sub": hs(claims(sub="Xq3bZ9kVfRhT2mN8pL5wY1cD4eA7")),
        "email-sub": hs(claims(sub="alice.smith+tips@example.com")),
        "sub-255": hs(claims(sub="a" * 255)),
        # Refused.
        "none": jwt.encode(claims(), None, algorithm="none"),
        "none-signed": hmac_token({"alg": "none", "typ": "JWT"}, claims(), SECRET),
        "none-capitalised": hmac_token({"alg": "None", "typ": "JWT"}, claims(), SECRET),
        "hs256-wrong-secret": hs(claims(), key=WRONG_SECRET),
        "rs256-stranger-known-kid": signed(claims(), rsa_stranger, "rsa-a", "RS256"),
        "rs256-stranger-unknown-kid": signed(claims(), rsa_stranger, "rsa-z", "RS256"),
        "rs256-no-kid": jwt.encode(claims(), rsa_a, algorithm="RS256"),
        "es256-stranger": signed(claims(), ec_stranger, "ec-a", "ES256"),
        "confusion-pem": hmac_token({"alg": "HS256", "typ": "JWT", "kid": "rsa-a"}, claims(), pem),
        "confusion-pem-no-kid": hmac_token({"alg": "HS256", "typ": "JWT"}, claims(), pem),
        "confusion-der": hmac_token({"alg": "HS256", "typ": "JWT", "kid": "rsa-a"}, claims(), der),
        "confusion-pkcs1": hmac_token({"alg": "HS256", "typ": "JWT", "kid": "rsa-a"}, claims(), pkcs1),
        "rs256-kid-of-ec-key": signed(claims(), rsa_a, "ec-a", "RS256"),
        "es384-kid-of-p256-key": signed(claims(), ec_384, "ec-a", "ES384"),
        "rs512-kid-pinned-rs256": signed(claims(), rsa_a, "rsa-a", "RS512"),
        "ps256": signed(claims(), rsa_a, "rsa-a", "PS256"),
        "crit": hmac_token({"alg": "HS256", "crit": ["exp"], "exp": 1}, claims(), SECRET),
        "expired": hs(claims(exp=NOW - HOUR, iat=NOW - 2 * HOUR)),
        "no-exp": hs(claims(exp=None)),
        "exp-string": hmac_token({"alg": "HS256"}, claims(exp="tomorrow"), SECRET),
        "wrong-audience": hs(claims(aud="someone-else")),
        "wrong-audience-array": hs(claims(aud=["someone-else", "another"])),
        "no-audience": hs(claims(aud=None)),
        "wrong-issuer": hs(claims(iss="https://evil.test/")),
        "no-issuer": hs(claims(iss=None)),
        "sub-empty": hs(claims(sub="")),
        "sub-10k": hs(claims(sub="a" * 10 * 1024)),
        "sub-256": hs(claims(sub="a" * 256)),
        "sub-sql": hs(claims(sub="alice'; DROP TABLE tipsd.ops; --")),
        "sub-missing": hs(claims(sub=None)),
        "sub-number": hmac_token({"alg": "HS256"}, claims(sub=42), SECRET),
        "sub-unicode": hs(claims(sub="аlice")),  # a Cyrillic а
        "sub-newline": hs(claims(sub="alice\nadmin")),
    }
    header, payload, signature = tokens["hs256"].split(".")
    other_payload = tokens["firebase-sub"].split(".")[1]  # another sub, signed with the same secret
    tokens["tampered-payload"] = ".".join([header, other_payload, signature])
    tokens["padded-signature"] = tokens["hs256"] + "="
    tokens["four-parts"] = tokens["hs256"] + ".e30"
    with open(os.path.join(directory, "tokens.json"), "w") as out:
        json.dump({"now": NOW, "audience": AUDIENCE, "issuer": ISSUER, "tokens": tokens},
                  out, indent=2)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
