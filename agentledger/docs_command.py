"""``agentledger docs add FILE --id ID --revision REV``: load a Markdown policy as a revision.

Each ``## Heading {#anchor}`` section becomes a passage ``ID#anchor``. The revision is stored as
a draft unless ``--approve-as`` names who approved it; an approved revision supersedes the
document's earlier ones from its ``--effective-from`` date (default: now).
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.ledger._engine import build_engine
from activities.retrieval import (
    GLOBAL_TENANT,
    RetrievalError,
    SqlRetriever,
    add_markdown,
    install,
)
from agentledger.config import Settings
from agentledger.errors import ConfigError, NotFound

say = print


def add_docs_parser(subparsers: Any) -> None:
    """Register ``docs add`` on the CLI's subparsers."""
    docs = subparsers.add_parser("docs", help="versioned policy documents for retrieval")
    verbs = docs.add_subparsers(dest="docs_command", required=True, metavar="VERB")
    add = verbs.add_parser("add", help="load a Markdown file as one document revision")
    add.add_argument("file", type=Path)
    add.add_argument("--id", dest="document_id", required=True, help="e.g. returns-2026-08")
    add.add_argument("--revision", required=True, help="e.g. v2")
    add.add_argument("--tenant", default=GLOBAL_TENANT, help="tenant id ('*': every tenant)")
    add.add_argument("--effective-from", type=_aware, help="ISO date or time (default: now)")
    add.add_argument("--approve-as", help="approve the revision as this principal")


def _aware(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date or time") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


async def docs_add(settings: Settings, args: argparse.Namespace) -> int:
    path: Path = args.file
    if not path.is_file():
        raise NotFound(f"no such file {path}")
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
            approved_by=args.approve_as,
        )
    except (RetrievalError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    finally:
        engine.dispose()
    state = f"approved by {doc.approved_by}" if doc.approved_by else "draft (not yet searchable)"
    say(f"{doc.document_id}@{doc.revision} for tenant {doc.tenant_id}: {state}")
    return 0
