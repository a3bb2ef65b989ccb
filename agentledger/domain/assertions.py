"""Signed assertions: who decided or replied, proven by a key the run pinned when it started.

A decision is only as strong as the identity behind it. A run's manifest pins the public keys of
the issuers it trusts (``TrustedKey``); an approval decision, and a customer's reply, carries an
assertion (a compact JWS, EdDSA over Ed25519) signed by one of them, naming its subject, this run
and approval (the audience), a digest of what it is about (the proposal, the reply's text) and
the decision itself, for a few minutes. Whoever reaches the Temporal frontend without a pinned
key's private half cannot approve or speak for a customer, whatever id they claim.

A run's start is signed the same way (decision ``start``, audience ``start_audience``, digest
the work order's): its requester asks for exactly this work order under this run id
(``workflows._start``).

The signature is checked by the workflow with the pinned key; everything the assertion *says* is
checked here, purely, against the run's clock (``now`` comes from the workflow).

An assertion is single-use: the run keeps the token id (``jti``) of every assertion it accepted
(``WorkingState.spent_assertions``, folded from the decisions and replies that recorded them)
for as long as the assertion could still be valid, and refuses it again as
``assertion_replayed``. A reply's assertion also names the question it answers (``reply_to``,
the ``reply_awaited`` event's seq), so a reply read from history answers nothing else.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Literal

from pydantic import ValidationError

from agentledger.domain._model import Frozen
from agentledger.domain.approvals import ApprovalRefusal
from agentledger.domain.canonical import sha256_hex
from agentledger.domain.principal import Principal, canonical_user_id, tenant_covers

ALGORITHM = "EdDSA"
AssertedDecision = Literal["approve", "reject", "reply", "start", "cancel", "steer", "fork"]
"""JWS ``alg`` of every assertion: Ed25519 (RFC 8037), deterministic and small."""

MAX_LIFETIME_SECONDS = 15 * 60
"""An assertion is a decision about to be sent, not a session: longer-lived ones are refused."""

CLOCK_SKEW_SECONDS = 60
"""How far the issuer's clock may run ahead of the run's (``nbf``/``iat`` in the future)."""


class TrustedKey(Frozen):
    """A public key approvals may be signed with, as pinned into a run's manifest."""

    kid: str
    issuer: str
    x: str
    """The Ed25519 public key, base64url without padding (the ``x`` of an OKP JWK)."""


class AssertionClaims(Frozen):
    """What an approval assertion says. Unknown claims are refused: nothing rides along."""

    iss: str
    sub: str
    aud: str
    iat: int
    nbf: int
    exp: int
    jti: str
    digest: str
    decision: AssertedDecision
    obo_iss: str | None = None
    """When a service signed on behalf of a caller it verified: the caller token's issuer..."""
    obo_jti: str | None = None
    """...and its id, so the decision traces back to the login that made it."""
    reply_to: int | None = None
    """A reply's: the seq of the ``reply_awaited`` event whose question it answers."""


class VerifiedAssertion(Frozen):
    """Recorded on the decision's event: whose signature decided, and with which token."""

    subject: str
    issuer: str
    key_id: str
    token_id: str
    on_behalf_of_issuer: str | None = None
    on_behalf_of_token_id: str | None = None


def approval_audience(run_id: str, approval_id: str) -> str:
    """The one audience an assertion for ``approval_id`` of ``run_id`` carries."""
    return f"agentledger:run:{run_id}:approval:{approval_id}"


def reply_audience(run_id: str) -> str:
    """The audience of an assertion that a reply to ``run_id`` is its sender's."""
    return f"agentledger:run:{run_id}:reply"


def start_audience(run_id: str) -> str:
    """The audience of an assertion that its subject asks for run ``run_id`` to start."""
    return f"agentledger:run:{run_id}:start"


def cancel_audience(run_id: str) -> str:
    """The audience of an assertion that its subject cancels run ``run_id``."""
    return f"agentledger:run:{run_id}:cancel"


def steer_audience(run_id: str) -> str:
    """The audience of an assertion that its subject instructs run ``run_id``."""
    return f"agentledger:run:{run_id}:steer"


def reply_digest(text: str) -> str:
    """What a reply's assertion binds: its exact text."""
    return sha256_hex(text)


class Expected(Frozen):
    """What an assertion must say to count here."""

    audience: str
    digest: str
    decision: AssertedDecision
    what: str
    """How refusals name what it is for: ``approval apr_7``, ``this run's replies``."""
    reply_to: int | None = None
    """A reply's: the question the run awaits an answer to (``None``: not checked)."""


def refused(reason: str, detail: str) -> ApprovalRefusal:
    return ApprovalRefusal(reason_code=f"assertion_{reason}", detail=detail)


def parse_claims(payload: object) -> AssertionClaims | ApprovalRefusal:
    """The claims of a verified payload, or why they are not an approval assertion."""
    try:
        return AssertionClaims.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return refused("malformed", f"not an approval assertion ({problems})")


def claims_refusal(
    claims: AssertionClaims,
    key: TrustedKey,
    expected: Expected,
    now: datetime,
    spent: Collection[str] = (),
) -> ApprovalRefusal | None:
    """``None`` when ``claims`` (signed with ``key``) say exactly what is ``expected``, now, and
    were not accepted before (``spent``: the token ids the run accepted)."""
    if claims.iss != key.issuer:
        return refused("wrong_issuer", f"signed with {key.kid}, a key of {key.issuer!r} only")
    if claims.aud != expected.audience:
        return refused("wrong_audience", f"the assertion is not for {expected.what}")
    if claims.jti in spent:
        return refused("replayed", f"assertion {claims.jti[:64]!r} was already used; sign again")
    if claims.digest != expected.digest:
        return refused(
            "wrong_digest", f"the assertion is about something else than {expected.what}"
        )
    if claims.decision != expected.decision:
        return refused("wrong_decision", f"the assertion says {claims.decision}")
    if expected.reply_to is not None and claims.reply_to != expected.reply_to:
        return refused(
            "wrong_question",
            f"the reply answers message #{claims.reply_to}, not #{expected.reply_to} (the "
            "question the run waits on)",
        )
    return _time_refusal(claims, int(now.timestamp()))


def _time_refusal(claims: AssertionClaims, now: int) -> ApprovalRefusal | None:
    if claims.exp - claims.iat > MAX_LIFETIME_SECONDS or claims.exp <= claims.iat:
        return refused("lifetime", f"an assertion lives at most {MAX_LIFETIME_SECONDS} s")
    if max(claims.nbf, claims.iat) > now + CLOCK_SKEW_SECONDS:
        return refused("not_yet_valid", "the assertion is not valid yet")
    if now >= claims.exp:
        return refused("expired", "the assertion has expired; sign the decision again")
    return None


def subject_refusal(claims: AssertionClaims, claimed_id: str) -> ApprovalRefusal | None:
    """A decision or reply that also names who sent it must name the assertion's subject."""
    if claimed_id and canonical_user_id(claimed_id) != canonical_user_id(claims.sub):
        return refused(
            "subject_mismatch", f"the assertion is {claims.sub!r}'s, not {claimed_id!r}'s"
        )
    return None


def foreign_speaker(
    assertion: VerifiedAssertion | None, keys: Collection[TrustedKey]
) -> str | None:
    """The issuer that speaks for the assertion's subject when it is none of the run's own
    (a service signed on behalf of a caller another issuer vouched for); ``None`` otherwise."""
    if assertion is None:
        return None
    speaker = assertion.on_behalf_of_issuer or assertion.issuer
    return None if speaker in {k.issuer for k in keys} else speaker


def issuer_refusal(
    speaker: str, entry: Principal, bound: Collection[str]
) -> ApprovalRefusal | None:
    """A foreign ``speaker`` speaks only for the directory's people of the tenants it is bound
    to (``bound``, the worker's configuration): anyone else is refused."""
    if any(tenant_covers(tenant, entry.tenant_id) for tenant in bound):
        return None
    return refused(
        "foreign_issuer",
        f"{speaker!r} does not speak for {entry.user_id} (tenant {entry.tenant_id!r})",
    )


def verified(claims: AssertionClaims, key: TrustedKey) -> VerifiedAssertion:
    return VerifiedAssertion(
        subject=claims.sub,
        issuer=claims.iss,
        key_id=key.kid,
        token_id=claims.jti,
        on_behalf_of_issuer=claims.obo_iss,
        on_behalf_of_token_id=claims.obo_jti,
    )


def spent_after(
    spent: Mapping[str, datetime], assertion: VerifiedAssertion | None, at: datetime
) -> dict[str, datetime]:
    """The token ids a run has accepted, after accepting ``assertion`` at ``at``: each kept
    until the latest moment the assertion could still be valid (``MAX_LIFETIME_SECONDS`` after
    an ``iat`` at most ``CLOCK_SKEW_SECONDS`` ahead of ``at``), then dropped, since an expired
    assertion is refused anyway. Bounded by lifetime, never by the state's window."""
    if assertion is None:
        return dict(spent)
    kept = {jti: until for jti, until in spent.items() if until > at}
    kept[assertion.token_id] = at + _LIVES_AT_MOST
    return kept


_LIVES_AT_MOST = timedelta(seconds=MAX_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS)
