"""Pure, deterministic core of agentledger.

Nothing in this package performs I/O, reads a clock or draws randomness: time, ids and
external observations are arguments. It imports only the standard library, pydantic and the
tokenizer (enforced by ``tests/domain/test_layers.py``).
"""
