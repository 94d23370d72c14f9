"""Certificates made at run time for TLS tests: a CA, a server certificate for 127.0.0.1
and localhost, one for another name, a client certificate, and a second CA whose
certificates nobody trusts; or (:func:`make_serving_certs`) a CA and one server
certificate for the addresses and names given (the kubelet harness's API server front).
EC keys: made in microseconds, where RSA keys take a noticeable while."""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclasses.dataclass(frozen=True)
class CertFiles:
    """PEM files: each certificate with its key beside it."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_ca: Path
    """A CA nobody trusts ..."""
    rogue_client_cert: Path
    """... and a client certificate it signed."""
    rogue_client_key: Path
    elsewhere_cert: Path
    """A server certificate the CA signed for another host (``elsewhere.invalid``) ..."""
    elsewhere_key: Path


@dataclasses.dataclass(frozen=True)
class _Issuer:
    name: x509.Name
    key: ec.EllipticCurvePrivateKey


def make_certs(directory: Path) -> CertFiles:
    """Write a fresh set of certificates and keys under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _authority("rocketkube test CA", directory / "ca.pem")
    rogue = _authority("rogue CA", directory / "rogue-ca.pem")
    server_names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    _leaf(ca, "server", server_names, ExtendedKeyUsageOID.SERVER_AUTH, directory)
    _leaf(ca, "client", [], ExtendedKeyUsageOID.CLIENT_AUTH, directory)
    elsewhere: list[x509.GeneralName] = [x509.DNSName("elsewhere.invalid")]
    _leaf(ca, "elsewhere", elsewhere, ExtendedKeyUsageOID.SERVER_AUTH, directory)
    _leaf(rogue, "rogue-client", [], ExtendedKeyUsageOID.CLIENT_AUTH, directory)
    return CertFiles(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server-key.pem",
        client_cert=directory / "client.pem",
        client_key=directory / "client-key.pem",
        rogue_ca=directory / "rogue-ca.pem",
        rogue_client_cert=directory / "rogue-client.pem",
        rogue_client_key=directory / "rogue-client-key.pem",
        elsewhere_cert=directory / "elsewhere.pem",
        elsewhere_key=directory / "elsewhere-key.pem",
    )


@dataclasses.dataclass(frozen=True)
class ServingCerts:
    """A CA and a server certificate it signed, with the certificate's key."""

    ca: Path
    cert: Path
    key: Path


def make_serving_certs(directory: Path, addresses: list[str], dns_names: list[str]) -> ServingCerts:
    """Write a fresh CA and a server certificate for ``addresses`` (IPs) and ``dns_names``
    under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _authority("rocketkube test cluster CA", directory / "ca.pem")
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    _leaf(ca, "server", names, ExtendedKeyUsageOID.SERVER_AUTH, directory)
    return ServingCerts(
        directory / "ca.pem", directory / "server.pem", directory / "server-key.pem"
    )


def _authority(common_name: str, path: Path) -> _Issuer:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(name, name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return _Issuer(name, key)


def _leaf(
    issuer: _Issuer,
    stem: str,
    names: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    directory: Path,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"rocketkube {stem}")])
    builder = (
        _builder(subject, issuer.name, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()), False
        )
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(issuer.key, hashes.SHA256())
    (directory / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{stem}-key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
    )
