"""The command-line face: ``agentledger COMMAND``. ``main`` parses and dispatches; each command
group has its module (``stack``, ``runs``, ``show``, ``packs``, ``deploy``, ``docs``, ``token``,
``demo``, ``eval``, ``serve``, ``replay``, ``scaffold``). Printing happens here and nowhere else.

``entrypoint`` is the console script's target. The function ``main`` is not re-exported: it
would hide the module ``agentledger.cli.main`` (``from agentledger.cli import main``).
"""

from agentledger.cli.main import entrypoint

__all__ = ["entrypoint"]
