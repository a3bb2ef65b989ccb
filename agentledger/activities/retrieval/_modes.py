"""Which retriever a search uses when its caller names none: set once per process by the shell.

Full-text is the default and needs nothing beyond the base install. ``semantic`` and ``fused``
need the ``semantic`` extra (``pip install agentledger[semantic]``); asking for them without it is
refused when the process configures retrieval, not at the first customer question.
"""

from __future__ import annotations

import logging

from agentledger.activities.retrieval._embedder import MODEL_ID, semantic_installed
from agentledger.activities.retrieval._model import (
    RETRIEVAL_MODES,
    RetrievalMode,
    SemanticUnavailable,
)

log = logging.getLogger("agentledger.retrieval")
_active: list[RetrievalMode] = ["fulltext"]


def check_mode(mode: str) -> RetrievalMode:
    """``mode`` as a retrieval mode, or ``ValueError``; ``SemanticUnavailable`` when it needs
    the extra and the extra is not installed."""
    for known in RETRIEVAL_MODES:
        if mode == known:
            if known != "fulltext" and not semantic_installed():
                raise SemanticUnavailable(
                    f"retrieval {known!r} needs the 'semantic' extra "
                    "(pip install 'agentledger[semantic]'); full-text needs nothing"
                )
            return known
    raise ValueError(f"unknown retrieval {mode!r}; expected one of {', '.join(RETRIEVAL_MODES)}")


def configure_retrieval(mode: str) -> RetrievalMode:
    """Make ``mode`` this process's default retriever and say so in the log."""
    checked = check_mode(mode)
    _active[0] = checked
    model = "" if checked == "fulltext" else f" (embedding model {MODEL_ID})"
    log.info("retrieval: %s%s", checked, model)
    return checked


def active_mode() -> RetrievalMode:
    return _active[0]
