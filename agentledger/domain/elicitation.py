"""Elicitation: an MCP server asking a human for input in the middle of a tool call.

A tool activity never blocks for hours waiting on a person, and the client never answers on its
own. The runtime routes a request to a human through the approval lifecycle:

1. the call runs with no answers; the client declines the server's request and the result
   records it (message, requested schema, digest) under ``elicitations``;
2. the workflow keeps the operation open and requests an approval bound to the call *and* the
   request's digest (so the grant cannot authorise anything else);
3. a human grants it with content, which must satisfy the requested schema and is recorded in
   ``ApprovalGranted``; the call is re-run with exactly that answer for exactly that request,
   under its own idempotency key (a server that honours keys would otherwise return the first,
   declined result). A rejection or expiry settles the operation with the declined result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import jsonschema  # type: ignore[import-untyped]  # no stubs shipped
from pydantic import JsonValue, ValidationError

from agentledger.domain._model import Frozen
from agentledger.domain.canonical import sha256_hex


class ElicitationRequest(Frozen):
    mode: Literal["form", "url"]
    message: str
    requested_schema: dict[str, JsonValue] | None = None
    url: str | None = None

    @property
    def digest(self) -> str:
        return sha256_hex(self.model_dump(mode="json"))


def declined_elicitation(model_view: Mapping[str, JsonValue]) -> ElicitationRequest | None:
    """The first request a call's result says was declined, if any."""
    asked = model_view.get("elicitations")
    for record in asked if isinstance(asked, list) else []:
        if isinstance(record, dict) and record.get("action") == "decline":
            fields = {k: v for k, v in record.items() if k not in ("digest", "action")}
            try:
                return ElicitationRequest.model_validate(fields)
            except ValidationError:
                return None  # not a request this client recorded: nothing to route
    return None


def elicitation_approval_digest(
    operation_id: str, arguments_digest: str, manifest_hash: str, request: ElicitationRequest
) -> str:
    """What an elicitation approval is bound to: this operation, these arguments, this request."""
    return sha256_hex(
        {
            "operation_id": operation_id,
            "arguments_digest": arguments_digest,
            "manifest_hash": manifest_hash,
            "elicitation": request.digest,
        }
    )


def answered_idempotency_key(key: str | None, request: ElicitationRequest) -> str | None:
    """The re-run's key: derived from the call's and the request it answers, so it is stable
    across retries of the re-run and distinct from the declined first call."""
    if key is None:
        return None
    return f"{key}:elicitation:{request.digest.removeprefix('sha256:')[:16]}"


def content_problem(
    request: ElicitationRequest, content: Mapping[str, JsonValue] | None
) -> str | None:
    """Why ``content`` cannot answer ``request`` (``None`` when it can)."""
    if content is None:
        return "an accepted elicitation needs content"
    if request.requested_schema is None:
        return None
    validator = jsonschema.Draft202012Validator(request.requested_schema)
    errors = sorted(validator.iter_errors(dict(content)), key=str)
    if not errors:
        return None
    where = "/".join(str(part) for part in errors[0].absolute_path) or "(root)"
    return f"content does not match the requested schema at {where}: {errors[0].message}"
