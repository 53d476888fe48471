"""The certificate files a TLS-serving host reads, what a client trusts to reach it, and the start-up
lines that say so. Plain :mod:`ssl`: reading them needs no extra."""

from __future__ import annotations

import os
import ssl

import attrs

from mockllm.errors import UsageError


@attrs.frozen
class TlsFiles:
    """``cert``: the server's certificate chain (PEM); ``key``: its private key (PEM); ``ca``: the file a
    client trusts to reach it (mockllm's loopback certificate authority), or None for a certificate the
    user brought (their own authority signed it)."""

    cert: str
    key: str
    ca: str | None = None

    def server_context(self) -> ssl.SSLContext:
        """A server-side context holding the certificate and key: HTTP/1.1 only (the same protocol as
        without TLS), TLS 1.2 and later."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        context.load_cert_chain(self.cert, self.key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this server: its certificate authority (``ca``), else the
        system's trust store (a certificate the user brought)."""
        return ssl.create_default_context(cafile=self.ca) if self.ca else ssl.create_default_context()

    def trust_hint(self) -> str:
        """The start-up lines telling the user how clients trust the server."""
        if self.ca is None:
            return f"mockllm: serving TLS with {self.cert}; clients must trust the authority that signed it"
        return (
            f"mockllm: serving TLS with mockllm's loopback certificate (localhost, 127.0.0.1, ::1)\n"
            f"mockllm: clients trust it with SSL_CERT_FILE={self.ca}\n"
            f"mockllm:   or in code: httpx.Client(verify=ssl.create_default_context(cafile=CA)); google-genai: "
            'HttpOptions(client_args={"verify": ctx}, async_client_args={"ssl": ctx}) (docs/tls.md)'
        )


def given_files(cert: str | None, key: str | None) -> TlsFiles:
    """``--tls-cert FILE --tls-key FILE``: both or neither, and a pair that loads (checked now, not on
    the first connection). Raises :class:`UsageError` saying what is wrong."""
    if not cert or not key:
        missing = "--tls-key" if cert else "--tls-cert"
        raise UsageError(f"mockllm: --tls-cert and --tls-key go together: {missing} is missing")
    files = TlsFiles(os.path.abspath(cert), os.path.abspath(key))
    try:
        files.server_context()
    except FileNotFoundError as exc:
        raise UsageError(f"mockllm: cannot read {exc.filename or cert}: no such file") from exc
    except (OSError, ssl.SSLError) as exc:
        raise UsageError(
            f"mockllm: --tls-cert {cert} with --tls-key {key} cannot serve TLS: {exc} "
            "(PEM files, the key matching the certificate)"
        ) from exc
    return files
