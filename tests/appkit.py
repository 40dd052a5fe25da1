"""A GitHub App for the tests: a real RSA key pair, its JWT, and the App set up in ghsim."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ghsim import GitHubSim
from ghsim.apps import App, Installation


@dataclass(frozen=True)
class KeyPair:
    private: str  # PEM, PKCS#8
    public: str  # PEM, SubjectPublicKeyInfo


@lru_cache(maxsize=4)
def key_pair(number: int = 0) -> KeyPair:
    """A fresh 2048-bit RSA key pair (``number`` tells apart several in one session)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return KeyPair(private, public)


def app_jwt(app: App, private: str, now: datetime, *, iat: int = -60, exp: int = 540) -> str:
    """A JWT of ``app`` signed with ``private``, ``iat``/``exp`` seconds from ``now``."""
    epoch = int(now.timestamp())
    claims = {"iat": epoch + iat, "exp": epoch + exp, "iss": str(app.id)}
    return jwt.encode(claims, private, algorithm="RS256")


@dataclass(frozen=True)
class SimApp:
    app: App
    installation: Installation
    keys: KeyPair
    key_file: Path


def install_app(
    sim: GitHubSim, tmp: Path, account: str = "octo", *, slug: str = "kdev-review"
) -> SimApp:
    """An App ``slug`` installed on ``account``, its private key in a 0600 file in ``tmp``."""
    keys = key_pair()
    app = sim.create_app(slug, keys.public)
    installation = sim.install_app(app.id, account)
    key_file = tmp / f"{slug}.private-key.pem"
    key_file.write_text(keys.private, encoding="ascii")
    key_file.chmod(0o600)
    return SimApp(app, installation, keys, key_file)
