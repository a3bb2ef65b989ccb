"""Why a secure connection to Temporal was refused, in words a person can act on.

The SDK's core reports every failure to connect as one ``RuntimeError`` whose text carries the
TLS library's verdict (rustls) or the gateway's gRPC status. A refusal is final: retrying the
same certificates against the same frontend cannot succeed, so ``connect`` stops at once.
"""

from __future__ import annotations

import re

from agentledger.app.config import TemporalSecurity
from agentledger.app.errors import ConnectionRefused

_CA = "AGENTLEDGER_TEMPORAL_TLS_CA"
_NAME = "AGENTLEDGER_TEMPORAL_TLS_SERVER_NAME"
_CLIENT = "AGENTLEDGER_TEMPORAL_TLS_CERT and AGENTLEDGER_TEMPORAL_TLS_KEY"
# A plaintext HTTP/2 client reading a TLS record as a frame, or an HTTP error page as gRPC.
_PLAIN_TO_TLS = ("FRAME_SIZE_ERROR", "400 Bad Request", "invalid compression flag")


def connection_refusal(
    error: str, address: str, security: TemporalSecurity
) -> ConnectionRefused | None:
    """The named refusal behind the SDK's ``error`` text, or ``None`` (not a refusal: the
    server may still be starting, so the caller retries)."""
    at = f"Temporal at {address}"
    if "InvalidCertificate(Expired" in error:
        return ConnectionRefused(
            f"{at} presented an expired certificate: renew the frontend's certificate",
            "server_certificate_expired",
        )
    if "NotValidForName" in error:
        presented = ", ".join(re.findall(r'DnsName\(\\*"([^"\\]+)', error.split("presented")[-1]))
        return ConnectionRefused(
            f"{at} presented a certificate for {presented or 'other names'}, not "
            f"{security.server_name or address.rsplit(':', 1)[0]}: set {_NAME} to the name "
            "its certificate carries",
            "server_name_mismatch",
        )
    if "InvalidCertificate(" in error or "UnknownIssuer" in error:
        trusted = f"the CA in {_CA}" if security.ca_cert else "the system's CAs (set " + _CA + ")"
        return ConnectionRefused(
            f"{at} presented a certificate not signed by {trusted}", "server_certificate_untrusted"
        )
    if "code: Unauthenticated" in error or "certificate required" in error.lower():
        given = "its certificate was refused" if security.client_cert else "none was given"
        return ConnectionRefused(
            f"{at} requires a client certificate signed by its client CA ({given}): set {_CLIENT}",
            "client_certificate_refused",
        )
    return _mismatch(error, at, security)


def _mismatch(error: str, at: str, security: TemporalSecurity) -> ConnectionRefused | None:
    if security.tls and ("InvalidContentType" in error or "CorruptMessage" in error):
        return ConnectionRefused(
            f"{at} does not speak TLS: unset AGENTLEDGER_TEMPORAL_TLS, or use its TLS address",
            "tls_mismatch",
        )
    if not security.tls and any(s in error for s in _PLAIN_TO_TLS):
        return ConnectionRefused(
            f"{at} answered as a TLS endpoint or a proxy, not as Temporal: set "
            "AGENTLEDGER_TEMPORAL_TLS=1 (and " + _CA + " for a private CA)",
            "tls_mismatch",
        )
    return None
