"""The passage rows of one revision, as ``SqlRetriever.add_document`` inserts them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentledger.activities._terms import utc
from agentledger.activities.retrieval._markdown import ParsedDocument


def passage_rows(
    tenant_id: str, document_id: str, revision: str, effective_from: datetime, doc: ParsedDocument
) -> list[dict[str, Any]]:
    return [
        {
            "tenant_id": tenant_id,
            "document_id": document_id,
            "revision": revision,
            "anchor": p.anchor,
            "source_id": f"{document_id}#{p.anchor}",
            "title": p.title,
            "text": p.text,
            "content_hash": p.content_hash,
            "approved": False,
            "effective_from": utc(effective_from),
            "effective_until": None,
        }
        for p in doc.passages
    ]
