"""The signature of an assertion, verified inside the workflow with a key the run pinned.

Pure and deterministic (a signature check reads nothing but its inputs), so it runs in the
update's validator and in its handler alike; what the claims say is the domain's to judge
(``domain.assertions``), against the run's own clock.

An update that no pinned key signed (no assertion, not a JWS, an unknown key, a signature that
does not verify) is something anyone who reaches the frontend can send without limit: the
validators refuse it before it is accepted (``refuse_unsigned``), so it never takes a handler,
never waits on an activity while holding one of the execution's in-flight update slots, and
leaves nothing in history. Operators see such floods on a counter and a warning.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection
from datetime import datetime

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    # Shared with the worker: compiled code, deterministic, no state a run could change.
    import jwt
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from agentledger.domain.approvals import ApprovalRefusal
    from agentledger.domain.assertions import (
        ALGORITHM,
        Expected,
        TrustedKey,
        VerifiedAssertion,
        claims_refusal,
        parse_claims,
        refused,
        subject_refusal,
        verified,
    )


MAX_ASSERTION_CHARS = 4096
"""An Ed25519 JWS with these claims is well under 1 kB; anything larger is not one."""

_JWS = jwt.PyJWS(algorithms=[ALGORITHM])

UNSIGNED_REFUSED = "agentledger_unsigned_updates_refused"
"""The workflow metric counting updates refused in a validator for want of a pinned key's
signature, by ``update`` and ``reason`` (exported as ``..._total`` with the SDK's metrics)."""


def check_assertion(
    token: str,
    keys: tuple[TrustedKey, ...],
    expected: Expected,
    *,
    claimed_id: str,
    now: datetime,
    spent: Collection[str] = (),
) -> VerifiedAssertion | ApprovalRefusal:
    """Who ``token`` proves said what is ``expected`` now, or why it proves nothing (``spent``:
    the token ids the run already accepted; one of them again is ``assertion_replayed``)."""
    signed = _signed_payload(token, keys)
    if isinstance(signed, ApprovalRefusal):
        return signed
    key, payload = signed
    claims = parse_claims(payload)
    if isinstance(claims, ApprovalRefusal):
        return claims
    refusal = claims_refusal(claims, key, expected, now, spent) or subject_refusal(
        claims, claimed_id
    )
    return refusal or verified(claims, key)


def unsigned_refusal(token: str, keys: tuple[TrustedKey, ...]) -> ApprovalRefusal | None:
    """Why no key of ``keys`` signed ``token`` (anyone could have sent it), or ``None`` when
    one did: what its claims say is judged with the rest of the decision or reply."""
    signed = _signed_payload(token, keys)
    return signed if isinstance(signed, ApprovalRefusal) else None


def refuse_unsigned(update: str, token: str, keys: tuple[TrustedKey, ...]) -> None:
    """In ``update``'s validator, for a run that pinned ``keys``: refuse an update no pinned
    key signed, counted and logged, before it is accepted. Validators do not run on replay."""
    refusal = unsigned_refusal(token, keys) if keys else None
    if refusal is None:
        return
    reason = refusal.reason_code
    counter = workflow.metric_meter().create_counter(
        UNSIGNED_REFUSED, "updates refused in the validator: no pinned key signed them"
    )
    counter.add(1, {"update": update, "reason": reason})
    workflow.logger.warning("refused an unsigned %s update: %s", update, reason)
    raise ApplicationError(f"{reason}: {refusal.detail}", type=reason, non_retryable=True)


def _signed_payload(
    token: str, keys: tuple[TrustedKey, ...]
) -> tuple[TrustedKey, object] | ApprovalRefusal:
    """The pinned key named by the token's header and the payload it signed."""
    if not token:
        return refused("missing", "this run takes only what a trusted issuer signed")
    if len(token) > MAX_ASSERTION_CHARS:
        return refused("malformed", f"an assertion is at most {MAX_ASSERTION_CHARS} characters")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        return refused("malformed", f"not a compact JWS ({exc})")
    if header.get("alg") != ALGORITHM:
        return refused("malformed", f"alg must be {ALGORITHM}, not {header.get('alg')!r}")
    key = next((k for k in keys if k.kid == header.get("kid")), None)
    if key is None:
        return refused("untrusted_key", f"key {header.get('kid')!r} is not pinned by this run")
    try:
        public = Ed25519PublicKey.from_public_bytes(_b64url(key.x))
        payload = _JWS.decode(token, key=public, algorithms=[ALGORITHM])
        return key, json.loads(payload)
    except (jwt.PyJWTError, ValueError, binascii.Error) as exc:
        return refused("bad_signature", f"the signature does not verify with {key.kid} ({exc})")


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
