"""Errors as RFC 9457 problem details: one typed ``type`` per kind of failure.

A client branches on ``type``, never on ``detail`` (which is for people). Every failure the API
answers with is an ``ApiProblem`` or one of the framework's errors translated here, so no
request is answered with a bare 500 page or a stack trace.

ApiProblem
 ├── 400 malformed-json, invalid-request (422), payload-too-large (413)
 ├── 401 unauthenticated, invalid-token, token-expired, wrong-audience, issuer-not-trusted,
 │       issuer-not-bound, claims-disagree
 ├── 403 forbidden, csrf-failed, and the workflow's refusals (requester-cannot-approve, …)
 ├── 404 not-found
 ├── 409 not-pending, digest-mismatch, expired, conflict
 └── 503 unavailable (Temporal or the database cannot be reached), issuer-unreachable (an OIDC
         issuer's discovery document or keys could not be fetched), pack-installed-after-start
         (a pack installed after the service started: restart it to serve the pack),
         pack-unavailable (installed, but it cannot be loaded: a missing dependency)
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentledger.activities.ledger import SubjectErased
from agentledger.app.erasure import ContentErased
from agentledger.app.errors import Refused

PROBLEM_BASE = "https://agentledger.dev/problems/"
PROBLEM_MEDIA_TYPE = "application/problem+json"


class Problem(BaseModel):
    """The body of every error (RFC 9457); refusals add ``reason_code``, bad bodies ``errors``."""

    model_config = ConfigDict(extra="allow")
    type: str
    title: str
    status: int
    detail: str


_DESCRIBED = {
    400: "malformed JSON or cursor",
    401: "no token, or one no trusted issuer vouches for (expired, wrong audience, forged)",
    403: "refused: a missing role, the requester deciding, a CSRF mismatch",
    404: "unknown, or another tenant's",
    409: "the state moved on (already decided, expired, a conflicting revision)",
    413: "body over the size cap",
    422: "a body or parameter of the wrong shape",
}
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "description": text, "content": {PROBLEM_MEDIA_TYPE: {}}}
    for status, text in _DESCRIBED.items()
}
"""Documented on every API route, so the OpenAPI says what each failure looks like."""


class ApiProblem(Exception):
    """A typed failure the API answers with (``slug`` becomes the problem ``type``)."""

    def __init__(self, status: int, slug: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.slug, self.detail, self.extra = status, slug, detail, extra

    def body(self) -> dict[str, Any]:
        return {
            "type": PROBLEM_BASE + self.slug,
            "title": self.slug.replace("-", " "),
            "status": self.status,
            "detail": self.detail,
            **self.extra,
        }


def problem_response(problem: ApiProblem, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        problem.body(), status_code=problem.status, media_type=PROBLEM_MEDIA_TYPE, headers=headers
    )


def unauthenticated(detail: str, slug: str = "invalid-token") -> ApiProblem:
    return ApiProblem(401, slug, detail)


def not_found(what: str) -> ApiProblem:
    """Also the answer for another tenant's objects: their existence is not disclosed."""
    return ApiProblem(404, "not-found", f"no {what}")


def _on_problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiProblem)
    headers = {"WWW-Authenticate": 'Bearer realm="agentledger"'} if exc.status == 401 else None
    return problem_response(exc, headers)


def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [dict(e) for e in exc.errors()]
    if any(e.get("type") == "json_invalid" for e in errors):
        return problem_response(ApiProblem(400, "malformed-json", "the body is not valid JSON"))
    shown = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))} for e in errors]
    first = shown[0] if shown else {"loc": [], "msg": "invalid"}
    detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
    return problem_response(ApiProblem(422, "invalid-request", detail, errors=shown))


def _on_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    slug = {404: "not-found", 405: "method-not-allowed"}.get(exc.status_code, "http-error")
    return problem_response(ApiProblem(exc.status_code, slug, str(exc.detail)))


def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug still answers in the API's language, without internals."""
    problem = ApiProblem(500, "internal-error", f"unexpected {type(exc).__name__}; see the log")
    return problem_response(problem)


def _on_erased(request: Request, exc: Exception) -> JSONResponse:
    """A run whose content an erasure destroyed: gone, and said so (its timeline of kinds and
    digests stays: ``agentledger show``/``verify``)."""
    return problem_response(ApiProblem(410, "content-erased", str(exc)))


def _on_subject_erased(request: Request, exc: Exception) -> JSONResponse:
    """Content about a subject whose erasure has begun (a memory of theirs corrected, say):
    nothing more of theirs is stored."""
    return problem_response(ApiProblem(409, "subject-erased", str(exc)))


def install_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiProblem, _on_problem)
    app.add_exception_handler(ContentErased, _on_erased)
    app.add_exception_handler(SubjectErased, _on_subject_erased)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_exception_handler(Exception, _on_unexpected)


_CONFLICTS = {"not_pending", "digest_mismatch", "expired", "run_ended", "already_erased"}
"""Refusals about the approval's state rather than the caller's authority: ``409``."""
_UNPROCESSABLE = {
    "invalid_edit", "empty_edit", "edit_not_allowed", "argument_mismatch",
    "exceeds_verified_limit", "fork_point_unknown", "fork_point_mid_operation",
    "fork_point_ended", "fork_without_sandbox", "unknown_profile", "bad_reason",
}  # fmt: skip
"""Edits the run cannot apply (outside the schema, against verified facts) and fork points a
fork cannot start from: ``422``."""


def refusal_problem(exc: Refused) -> ApiProblem:
    code = exc.reason_code or "refused"
    status = 409 if code in _CONFLICTS or code == "refused" else 403
    status = 422 if code in _UNPROCESSABLE else status
    detail = (
        str(exc)
        .removeprefix("approval refused: ")
        .removeprefix("reply refused: ")
        .removeprefix("cancel refused: ")
        .removeprefix("steer refused: ")
        .removeprefix("fork refused: ")
    )
    return ApiProblem(status, code.replace("_", "-"), detail, reason_code=code)
