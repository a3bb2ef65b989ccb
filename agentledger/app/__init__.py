"""The application layer both faces share: the runtime (composition root), config, errors,
registry, runs (start, wait, decide, reply), identity, the Temporal connection, the embedded dev
server, rendering and the ``stack`` operations. It returns values and never prints.

``Runtime`` is imported on first use: ``agentledger --help`` loads ``app.errors`` and no more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentledger.app.runtime import Runtime

__all__ = ["Runtime"]


def __getattr__(name: str) -> Any:
    if name == "Runtime":
        from agentledger.app.runtime import Runtime

        return Runtime
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
