"""A throw-away CA and serving certificate for the emulator.

kubectl (client-go's clientcmd) sends credentials only to https servers, so the
emulator can serve TLS. Certificates are made with the `cryptography` package when
it is installed, else with the `openssl` command; both only when TLS is asked for.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class ServingCert:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # ssl wants files; they live only while the context is built.
        with tempfile.TemporaryDirectory(prefix="hpactl-emulator-tls-") as d:
            cert = Path(d) / "tls.crt"
            key = Path(d) / "tls.key"
            cert.write_bytes(self.cert_pem + self.ca_pem)
            key.write_bytes(self.key_pem)
            key.chmod(0o600)
            ctx.load_cert_chain(str(cert), str(key))
        return ctx


def make_serving_cert(host: str) -> ServingCert:
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return _openssl_serving_cert(host)
    return _cryptography_serving_cert(host)


def _openssl_serving_cert(host: str) -> ServingCert:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("TLS needs the 'cryptography' package or the openssl command")
    sans = ["DNS:localhost", "IP:127.0.0.1"]
    if host not in ("127.0.0.1", "localhost"):
        try:
            ipaddress.ip_address(host)
            sans.append(f"IP:{host}")
        except ValueError:
            sans.append(f"DNS:{host}")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    with tempfile.TemporaryDirectory(prefix="hpactl-emulator-ca-") as d:
        p = Path(d)

        def run(*args: str) -> None:
            subprocess.run([openssl, *args], check=True, capture_output=True, cwd=d)

        run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "7",
            "-subj", "/CN=hpactl-emulator-ca",
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature")  # fmt: skip
        run("req", *ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=hpactl-emulator")
        (p / "ext.cnf").write_text(
            f"subjectAltName={','.join(sans)}\nextendedKeyUsage=serverAuth\n"
        )
        run("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "tls.crt", "-days", "7", "-extfile", "ext.cnf")  # fmt: skip
        return ServingCert(
            ca_pem=(p / "ca.crt").read_bytes(),
            cert_pem=(p / "tls.crt").read_bytes(),
            key_pem=(p / "tls.key").read_bytes(),
        )


def _cryptography_serving_cert(host: str) -> ServingCert:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    not_after = now + datetime.timedelta(days=7)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hpactl-emulator-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
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
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for ip in {"127.0.0.1", host}:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(ip)))
        except ValueError:
            sans.append(x509.DNSName(ip))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hpactl-emulator")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCert(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
