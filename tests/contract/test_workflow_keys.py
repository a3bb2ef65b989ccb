"""Each workflow's own Temporal payload key (``activities.ledger._payload_keys``), on both
backends: made once however many processes seal its first payloads at the same time, stored only
wrapped under the ring, and gone for every process that did not hold it once its run is shredded;
a shredded run never gets a new one."""

from __future__ import annotations

import base64
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, select

from agentledger.activities.ledger import (
    WORKFLOW_KEY_PREFIX,
    ContentErased,
    KeyWrap,
    Ledger,
    PayloadKeyGone,
    WorkflowKeys,
    retention,
)
from agentledger.activities.ledger._tables import payload_keys
from bench.factories import T0, refund_run
from tests.contract._ring import RING


def _keys(engine: Engine) -> WorkflowKeys:
    """What another process would hold: nothing cached."""
    return WorkflowKeys(lambda: engine, RING)


def test_concurrent_first_payloads_of_a_workflow_agree_on_one_key(sealed: Ledger) -> None:
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: _keys(sealed.engine).sealing("run-1")[0], range(16)))
    assert len(set(made)) == 1 and made[0].startswith(WORKFLOW_KEY_PREFIX)
    cipher = _keys(sealed.engine).opening(made[0])
    sealed_bytes = _keys(sealed.engine).sealing("run-1")[1].encrypt(b"\0" * 12, b"text", None)
    assert cipher.decrypt(b"\0" * 12, sealed_bytes, None) == b"text"
    with sealed.engine.connect() as conn:
        (wrapped,) = conn.execute(select(payload_keys.c.wrapped)).one()
    assert wrapped is not None and len(base64.b64decode(wrapped)) == 12 + 32 + 16  # wrapped


def test_shredding_a_run_destroys_its_key_for_good(sealed: Ledger) -> None:
    sealed.append(refund_run().events)
    key_id, _ = _keys(sealed.engine).sealing("run-1")
    other, _ = _keys(sealed.engine).sealing("run-2")  # a workflow that is no run of the ledger

    assert retention.shred_expired(sealed, {"*": 1}, T0.replace(year=T0.year + 1)) == 1
    with pytest.raises(PayloadKeyGone, match="erasure destroyed"):
        _keys(sealed.engine).opening(key_id)
    with pytest.raises(PayloadKeyGone, match="content was erased"):
        _keys(sealed.engine).sealing("run-1")
    assert _keys(sealed.engine).sealing("run-2")[0] == other  # untouched
    with sealed.engine.connect() as conn:
        wrapped = dict(
            conn.execute(select(payload_keys.c.workflow_id, payload_keys.c.wrapped)).all()
        )
    assert wrapped["run-1"] is None and wrapped["run-2"] is not None  # the row names a key gone


def test_a_shredded_run_without_a_key_never_gets_one(sealed: Ledger) -> None:
    sealed.append(refund_run().events)
    assert retention.shred_expired(sealed, {"*": 1}, T0.replace(year=T0.year + 1)) == 1
    with pytest.raises(PayloadKeyGone, match="content was erased"):
        _keys(sealed.engine).sealing("run-1")
    with pytest.raises(PayloadKeyGone, match="never held"):
        _keys(sealed.engine).opening(f"{WORKFLOW_KEY_PREFIX}unknown")


def test_a_key_wrapped_under_a_ring_key_rotated_in_elsewhere_opens_once_the_ring_is_read_again(
    sealed: Ledger,
) -> None:
    """Another process rotated the shared ring and made the workflow's key under the new ring
    key: this one, still holding the old ring, reads the ring again once and opens it; without a
    way to read it again, it is a typed refusal, never a crash."""
    rotated = KeyWrap("k2", {**RING.keys, "k2": os.urandom(32)})
    key_id, made = WorkflowKeys(lambda: sealed.engine, rotated).sealing("run-1")
    reads: list[KeyWrap] = []

    def read_again() -> KeyWrap:
        reads.append(rotated)
        return rotated

    opened = WorkflowKeys(lambda: sealed.engine, RING, reload=read_again).opening(key_id)
    assert opened.decrypt(b"\0" * 12, made.encrypt(b"\0" * 12, b"text", None), None) == b"text"
    assert len(reads) == 1
    with pytest.raises(ContentErased, match="ring lacks"):
        _keys(sealed.engine).opening(key_id)
