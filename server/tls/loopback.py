"""The loopback certificate ``mockllm serve --tls`` serves with when the user brings none: a
certificate authority of its own, which clients are told to trust, and a server certificate it signs
for ``localhost``, ``127.0.0.1`` and ``::1``.

Made once with the ``cryptography`` package (the ``tls`` extra: a well-kept library, already present
wherever ``pip`` is; the ``openssl`` command's options differ from version to version) and kept in
the user's cache (``$XDG_CACHE_HOME/mockllm/tls``, else ``~/.cache/mockllm/tls``; a folder in the
temporary directory when that cannot be written), so every run serves the same certificate and a
client told once to trust it keeps trusting it. The authority's private key is never written: the
authority signs this one certificate and nothing else, so trusting it trusts nothing but loopback.
Made again when it has less than :data:`RENEW_BEFORE` left to run.

Written to a fresh folder and renamed into place, so two processes starting at once (xdist workers)
never serve a key that does not match its certificate."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mockllm.errors import UsageError
from mockllm.server.tls.files import TlsFiles

if TYPE_CHECKING:
    from cryptography import x509

#: How long a made certificate is valid, and how long before its end it is made again.
VALID_FOR = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
FOLDER = "loopback-v1"  # a new name when what is made changes
CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "cert.pem", "key.pem"
NAMES = ("localhost", "127.0.0.1", "::1")

TLS_MISSING = (
    "mockllm: --tls makes its loopback certificate with the 'cryptography' package: pip install 'mockllm[tls]' "
    "(or give your own with --tls-cert FILE --tls-key FILE)"
)


def cache_root() -> Path:
    """Where the loopback certificate is kept: the user's cache folder for mockllm."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mockllm" / "tls"


def loopback_certificate(root: Path | None = None, *, now: datetime.datetime | None = None) -> TlsFiles:
    """The loopback certificate's files, made (or made again) when missing or near their end. ``root``:
    where they are kept (default :func:`cache_root`, else a folder in the temporary directory)."""
    when = now or datetime.datetime.now(datetime.UTC)
    roots = [root] if root is not None else [cache_root(), Path(tempfile.gettempdir()) / f"mockllm-tls-{_user()}"]
    problem: OSError | None = None
    for place in roots:
        try:
            return _kept_or_made(place, when)
        except OSError as exc:
            problem = exc
    raise UsageError(f"mockllm: --tls cannot write its loopback certificate: {problem}")


def _user() -> str:
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid is not None else os.environ.get("USERNAME", "user")


def _kept_or_made(root: Path, now: datetime.datetime) -> TlsFiles:
    folder = root / FOLDER
    kept = _files(folder)
    if _usable(kept, now):
        return kept
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    fresh = Path(tempfile.mkdtemp(prefix=".making-", dir=root))
    try:
        _make(fresh, now)
        if folder.exists():  # stale: out of the way (another process may be doing the same)
            stale = Path(tempfile.mkdtemp(prefix=".stale-", dir=root))
            with contextlib.suppress(OSError):
                folder.rename(stale / FOLDER)
            shutil.rmtree(stale, ignore_errors=True)
        with contextlib.suppress(OSError):  # another process won the race: its files are as good
            fresh.rename(folder)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    made = _files(folder)
    if not _usable(made, now):
        raise OSError(f"{folder}: the certificate files are missing or unreadable")
    return made


def _files(folder: Path) -> TlsFiles:
    return TlsFiles(str(folder / CERT_FILE), str(folder / KEY_FILE), str(folder / CA_FILE))


def _usable(files: TlsFiles, now: datetime.datetime) -> bool:
    """The three files are there and the certificate runs on for at least :data:`RENEW_BEFORE`."""
    if not all(os.path.isfile(path) for path in (files.cert, files.key, files.ca or "")):
        return False
    try:
        from cryptography import x509
    except ImportError:
        raise UsageError(TLS_MISSING) from None
    try:
        cert = x509.load_pem_x509_certificate(Path(files.cert).read_bytes())
    except (OSError, ValueError):
        return False
    ends: datetime.datetime = cert.not_valid_after_utc
    return bool(ends - now > RENEW_BEFORE)


def _make(folder: Path, now: datetime.datetime) -> None:
    """Write ``ca.pem`` (the authority), ``cert.pem`` (the server's certificate, then the authority's)
    and ``key.pem`` (the server's key, readable by the user only) into ``folder``."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509 import oid
    except ImportError:
        raise UsageError(TLS_MISSING) from None

    start, end = now - datetime.timedelta(hours=1), now + VALID_FOR
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, "mockllm loopback authority")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(NAMES[0]), *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in NAMES[1:])]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_pem = ca.public_bytes(pem)
    (folder / CA_FILE).write_bytes(ca_pem)
    (folder / CERT_FILE).write_bytes(cert.public_bytes(pem) + ca_pem)
    key_bytes = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    descriptor = os.open(folder / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(key_bytes)


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )
