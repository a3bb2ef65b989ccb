"""The command-line face: ``agentledger COMMAND``. ``main`` parses and dispatches; each command
group has its module (``stack``, ``runs``, ``show``, ``packs``, ``deploy``, ``docs``, ``token``,
``demo``, ``eval``, ``serve``, ``replay``, ``scaffold``). Printing happens here and nowhere else.
"""

from agentledger.cli.main import entrypoint, main

__all__ = ["entrypoint", "main"]
