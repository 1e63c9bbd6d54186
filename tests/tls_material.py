"""A throwaway certificate authority and server certificate for TLS tests."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_tls_files(directory: Path) -> TlsFiles:
    """A CA, and a certificate it signs for localhost and 127.0.0.1, as PEM files."""
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("wheel test CA"))
        .issuer_name(_name("wheel test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    files.key.chmod(0o600)
    return files


@dataclass(frozen=True)
class Authority:
    """A CA that issues certificates on demand (the secured-etcd tests' PKI)."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    path: Path

    @classmethod
    def make(cls, directory: Path, name: str = "wheel test CA") -> Authority:
        now = datetime.now(UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        path = directory / f"{name.replace(' ', '-')}.pem"
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return cls(cert, key, path)

    def issue(
        self, directory: Path, name: str, *, valid: timedelta = timedelta(days=1),
        ago: timedelta = timedelta(minutes=5), addresses: Sequence[str] = (),
    ) -> tuple[Path, Path]:  # fmt: skip
        """A certificate for `name` (also localhost, 127.0.0.1 and `addresses`) valid from
        `ago` before now for `valid`; its PEM and key paths."""
        now = datetime.now(UTC)
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - ago)
            .not_valid_after(now - ago + valid)
            .add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        *(
                            x509.IPAddress(ipaddress.ip_address(address))
                            for address in ("127.0.0.1", *addresses)
                        ),
                    ]
                ),
                critical=False,
            )
            .sign(self.key, hashes.SHA256())
        )
        pem, key_path = directory / f"{name}.pem", directory / f"{name}.key"
        pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        key_path.chmod(0o600)
        return pem, key_path
