"""``agentledger docs add FILE --id ID --revision REV``: load a Markdown policy as a revision.

Each ``## Heading {#anchor}`` section becomes a passage ``ID#anchor``. The revision is stored as
a draft unless ``--approve-as`` names who approved it (a decision signed, like a run's approvals,
by this data directory's issuer); an approved revision supersedes the
document's earlier ones from its ``--effective-from`` date (default: now).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from agentledger.activities.ledger import Ledger, build_engine
from agentledger.activities.retrieval import (
    GLOBAL_TENANT,
    PolicyDocument,
    RetrievalError,
    SqlRetriever,
    add_markdown,
    install,
)
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError, NotFound, Refused, in_words
from agentledger.app.identity import issuer_for
from agentledger.domain.principal import tenant_covers

say = print


POLICY_APPROVER_ROLE = "policy_approver"


def _policy_approver(settings: Settings, user_id: str, tenant_id: str) -> str:
    """The directory's id of someone who may approve a policy revision for ``tenant_id``."""
    with Ledger.open(settings.ledger_url) as ledger:
        found = ledger.get_principal(user_id)
    if found is None:
        raise Refused(f"{user_id!r} is not in the directory (`agentledger seed` loads samples)")
    if not found.has_role(POLICY_APPROVER_ROLE):
        raise Refused(f"{found.user_id} lacks the {POLICY_APPROVER_ROLE} role")
    if tenant_id != GLOBAL_TENANT and not tenant_covers(found.tenant_id, tenant_id):
        raise Refused(f"{found.user_id} cannot approve policies for tenant {tenant_id}")
    return found.user_id


def _signed_approval(
    settings: Settings, retriever: SqlRetriever, doc: PolicyDocument, approver: str
) -> PolicyDocument:
    """Approved as a run's approvals are: with an assertion this data directory's issuer signs,
    naming the approver and bound to the revision's content, kept with the revision."""
    assertion = issuer_for(settings).policy_assertion(
        approver,
        tenant_id=doc.tenant_id,
        document_id=doc.document_id,
        revision=doc.revision,
        content_hash=doc.content_hash,
    )
    return retriever.approve(
        doc.tenant_id, doc.document_id, doc.revision, approved_by=approver, assertion=assertion
    )


async def docs_add(settings: Settings, args: argparse.Namespace) -> int:
    path: Path = args.file
    if not path.is_file():
        raise NotFound(f"no such file {path}")
    approver = args.approve_as and _policy_approver(settings, args.approve_as, args.tenant)
    now = datetime.now(UTC)
    engine = build_engine(settings.ledger_url)
    try:
        install(engine)
        doc = add_markdown(
            SqlRetriever(engine),
            path,
            document_id=args.document_id,
            revision=args.revision,
            tenant_id=args.tenant,
            effective_from=args.effective_from or now,
            now=now,
        )
        if approver:
            doc = _signed_approval(settings, SqlRetriever(engine), doc, approver)
    except (RetrievalError, ValueError) as exc:
        raise ConfigError(f"{path}: {in_words(exc)}") from exc
    finally:
        engine.dispose()
    state = f"approved by {doc.approved_by}" if doc.approved_by else "draft (not yet searchable)"
    say(f"{doc.document_id}@{doc.revision} for tenant {doc.tenant_id}: {state}")
    return 0
