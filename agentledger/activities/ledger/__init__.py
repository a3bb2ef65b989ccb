"""The SQLAlchemy ledger: run events, content-addressed stores and read models.

``Ledger.open(url)`` works on SQLite (embedded default) and PostgreSQL (psycopg 3) alike; the
contract suite in ``tests/contract`` runs against both.
"""

from agentledger.activities.ledger._base import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_EVENT_BYTES
from agentledger.activities.ledger._engine import build_engine
from agentledger.activities.ledger._errors import (
    ContentErased,
    LedgerConflict,
    LedgerError,
    LedgerGap,
    LedgerUnavailable,
    PayloadRejected,
    PayloadTooLarge,
    SubjectErased,
)
from agentledger.activities.ledger._migrate import upgrade
from agentledger.activities.ledger._observer import AppendObserver
from agentledger.activities.ledger._payload_keys import (
    PREFIX as WORKFLOW_KEY_PREFIX,
)
from agentledger.activities.ledger._payload_keys import PayloadKeyGone, WorkflowKeys
from agentledger.activities.ledger._queries import RunFilter
from agentledger.activities.ledger._ring import KeyWrap
from agentledger.activities.ledger._rows import (
    ApprovalRow,
    ApprovalStatus,
    ReceiptRow,
    RunRow,
    RunStatus,
)
from agentledger.activities.ledger._store import Ledger
from agentledger.activities.ledger._streams import AnswerStream, AnswerStreams, StreamRead
from agentledger.activities.ledger._subjects import Sealer, seal_envelope

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_EVENT_BYTES",
    "WORKFLOW_KEY_PREFIX",
    "AnswerStream",
    "AnswerStreams",
    "AppendObserver",
    "ApprovalRow",
    "ApprovalStatus",
    "ContentErased",
    "KeyWrap",
    "Ledger",
    "LedgerConflict",
    "LedgerError",
    "LedgerGap",
    "LedgerUnavailable",
    "PayloadKeyGone",
    "PayloadRejected",
    "PayloadTooLarge",
    "ReceiptRow",
    "RunFilter",
    "RunRow",
    "RunStatus",
    "Sealer",
    "StreamRead",
    "SubjectErased",
    "WorkflowKeys",
    "build_engine",
    "seal_envelope",
    "upgrade",
]
