"""The serving certificate of the secure metrics server.

``serving_certificate(cert_file, key_file, hosts)`` loads ``--tls-cert-file`` /
``--tls-private-key-file`` when given; without them it makes a self-signed one in
memory at start, as kube-controller-manager does on its secure port: a CA named
``<host>-ca@<unix time>`` and a serving certificate ``<host>@<unix time>`` signed by it,
both valid for a year, for ``localhost``, ``127.0.0.1`` and the names given (the pod's
host name). Scrapers then either trust that CA (not possible from outside the process)
or skip verification (``insecure_skip_verify``), as they do for kube-controller-manager.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ServingCertificate", "serving_certificate"]


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    cert_pem: bytes  # the serving certificate, then any chain
    key_pem: bytes
    self_signed: bool

    def ssl_context(self) -> ssl.SSLContext:
        """A server context (TLS 1.2 or later, as Go's default for servers)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        # The ssl module reads certificates from files only; they exist while it does.
        with tempfile.TemporaryDirectory(prefix="hpactl-tls-") as d:
            cert, key = Path(d) / "tls.crt", Path(d) / "tls.key"
            key.touch(mode=0o600)
            key.write_bytes(self.key_pem)
            cert.write_bytes(self.cert_pem)
            ctx.load_cert_chain(str(cert), str(key))
        return ctx


def serving_certificate(
    cert_file: str | None, key_file: str | None, hosts: Iterable[str] = ()
) -> ServingCertificate:
    """The files' certificate, or a new self-signed one; ValueError (one line) if unusable."""
    if bool(cert_file) != bool(key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file must be given together")
    if cert_file and key_file:
        try:
            cert = Path(cert_file).read_bytes()
            key = Path(key_file).read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read {exc.filename}: {exc.strerror or exc}") from None
        found = ServingCertificate(cert, key, self_signed=False)
        try:
            found.ssl_context()
        except ssl.SSLError as exc:
            reason = exc.reason or str(exc)
            raise ValueError(
                f"--tls-cert-file {cert_file} / --tls-private-key-file {key_file}: "
                f"not a usable certificate and key ({reason})"
            ) from None
        return found
    return _self_signed(hosts)


def _self_signed(hosts: Iterable[str]) -> ServingCertificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    names = ["localhost", "127.0.0.1", *(h for h in hosts if h)]
    primary = next((h for h in names[2:] if h not in ("0.0.0.0", "::")), "localhost")
    stamp = int(time.time())
    now = datetime.datetime.now(datetime.UTC)
    not_after = now + datetime.timedelta(days=365)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"{primary}-ca@{stamp}")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in dict.fromkeys(names):
        if host in ("0.0.0.0", "::"):
            continue
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(f"{primary}@{stamp}"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return ServingCertificate(
        cert_pem=cert.public_bytes(pem) + ca.public_bytes(pem),
        key_pem=key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        self_signed=True,
    )
