"""The SDK's one error type: a pack whose declaration cannot run.

::

    PackDefinitionError (ValueError)
        raised at declaration time (a tool decorator, ``step()``, ``ScriptedModel``) or by
        ``AgentPack.build()``; never while a run is running. ``.subject`` names what was being
        declared, ``.pack`` the pack (when known), ``.problem`` what is wrong with it.

A declaration that raises it registers nothing: it is checked before it is recorded.
"""

from __future__ import annotations


class PackDefinitionError(ValueError):
    """A pack, tool, step or model declaration that the runtime could not run."""

    def __init__(self, subject: str, problem: str, *, pack: str | None = None) -> None:
        where = f"pack {pack!r}, {subject}" if pack else subject
        super().__init__(f"{where}: {problem}")
        self.subject = subject
        self.problem = problem
        self.pack = pack
