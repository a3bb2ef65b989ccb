"""Temporal payloads sealed with the application's keys (``app.payloads``): what the server holds
of a run is ciphertext, the key id rides in each payload so a rotated ring still opens old ones,
a payload under a key this process lacks or with a forged key id is refused by name, and a run's
history still verifies and replays through a client that holds the keys."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import WorkflowSerializationContext

from agentledger.activities.ledger import WORKFLOW_KEY_PREFIX, PayloadKeyGone, retention
from agentledger.app import runs as run_ops
from agentledger.app.config import Settings
from agentledger.app.errors import ConfigError, RunStuck
from agentledger.app.history import recorded_state
from agentledger.app.payload_converter import data_converter
from agentledger.app.payloads import (
    ENCODING,
    KEY_ID,
    EncryptionCodec,
    KeyRing,
    PayloadKeyMissing,
    payload_codec,
    rotate,
)
from agentledger.app.registry import get_pack
from agentledger.app.temporal import connect
from agentledger.domain.fold import project
from tests._temporal import Harness
from tests.workflows.test_refund_run import REQUEST

KEY1, KEY2 = bytes(range(32)), bytes(range(32, 64))
PLAIN = Payload(metadata={"encoding": b"json/plain"}, data=b'{"order_id": "ord_4821"}')


async def test_a_payload_is_sealed_under_the_active_key_and_a_rotated_ring_still_opens_it() -> None:
    old = EncryptionCodec(KeyRing("k1", {"k1": KEY1}))
    (sealed,) = await old.encode([PLAIN])
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID] == b"k1"
    assert b"ord_4821" not in sealed.SerializeToString()
    rotated = EncryptionCodec(KeyRing("k2", {"k1": KEY1, "k2": KEY2}))
    assert await rotated.decode([sealed]) == [PLAIN]
    (resealed,) = await rotated.encode([PLAIN])
    assert resealed.metadata[KEY_ID] == b"k2"
    # Clear-text payloads (histories recorded before the codec) pass through untouched.
    assert await rotated.decode([PLAIN]) == [PLAIN]


async def test_a_missing_key_or_a_forged_key_id_is_refused_by_name() -> None:
    (sealed,) = await EncryptionCodec(KeyRing("k1", {"k1": KEY1})).encode([PLAIN])
    with pytest.raises(PayloadKeyMissing, match="which this ring lacks"):
        await EncryptionCodec(KeyRing("k2", {"k2": KEY2})).decode([sealed])
    forged = Payload(metadata={**sealed.metadata, KEY_ID: b"k2"}, data=sealed.data)
    both = EncryptionCodec(KeyRing("k2", {"k1": KEY1, "k2": KEY1}))  # same bytes, other id
    with pytest.raises(PayloadKeyMissing, match="fails authentication"):
        await both.decode([forged])


def test_the_local_ring_is_made_once_owner_only_and_a_bad_ring_is_a_config_error(
    tmp_path: Path,
) -> None:
    first = KeyRing.local(tmp_path)
    path = tmp_path / "identity" / "payload-keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert KeyRing.local(tmp_path) == first and len(first.keys[first.active]) == 32
    key = base64.b64encode(KEY1).decode()
    bad = {
        "not json": "{",
        "no active": json.dumps({"keys": {"k1": key}}),
        "active unknown": json.dumps({"active": "k9", "keys": {"k1": key}}),
        "short key": json.dumps({"active": "k1", "keys": {"k1": "c2hvcnQ="}}),
        "not base64": json.dumps({"active": "k1", "keys": {"k1": "!!"}}),
    }
    for name, text in bad.items():
        ring = tmp_path / f"{name}.json"
        ring.write_text(text)
        with pytest.raises(ConfigError, match="payload key ring"):
            KeyRing.from_file(ring)


@pytest.mark.temporal
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_server_holds_ciphertext_and_the_run_still_verifies(harness: Harness) -> None:
    run_id = await harness.start(REQUEST)
    (approval,) = await harness.in_inbox(run_id)
    await harness.decide(run_id, approval.approval_id, "ops_lead_1")
    await harness.finish(run_id)
    # The history as the server gives it to anyone who may read it, without the keys: its
    # events' bytes (payload data as sent, not the base64 of a JSON rendering).
    history = await harness.client.get_workflow_handle(run_id).fetch_history()
    raw = b"".join(event.SerializeToString() for event in history.events)
    for text in (b"ord_4821", b"arrived late", b"usr_73", b"create_refund"):
        assert text not in raw, text
    assert raw.count(ENCODING) > 10
    # The same bytes opened with the keys hold them: the search above can find what it seeks.
    started = history.events[0].workflow_execution_started_event_attributes.input.payloads
    codec = harness.client.data_converter.payload_codec
    assert codec is not None
    (opened,) = await codec.decode(started)
    assert b"ord_4821" in opened.data and b"usr_73" in opened.data
    # With them: the state Temporal recorded is the ledger's (agentledger verify's check).
    recorded = await recorded_state(harness.client, run_id)
    assert recorded == project(harness.runtime.ledger.read(run_id))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # Temporal's side only
async def test_a_run_its_worker_cannot_open_is_named_stuck_not_waited_out(
    harness: Harness, tmp_path: Path
) -> None:
    """A starter sealing with a ring the worker lacks: the run's workflow task fails on every
    attempt (no crash loop: Temporal retries it), and ``wait_for`` says so by name."""
    elsewhere = Settings(
        data_dir=tmp_path / "elsewhere",
        temporal_address=harness.settings.address,
        database_url=harness.settings.ledger_url,  # the worker's ledger, its own key ring
    )
    stranger = await connect(elsewhere)  # its own data directory's ring, not the worker's
    order = get_pack("support").make_work_order(REQUEST, harness.principal("usr_73"))
    handle = await run_ops.start_run(
        stranger, harness.settings.task_queue, order, issuer=harness.issuer
    )
    try:
        with pytest.raises(
            RunStuck,
            match=r"workflow task has failed \d+ times: .*ring key 'local-1': not the ring",
        ):
            await run_ops.wait_for(stranger, handle.id, pending_approval=True, timeout=90)
    finally:
        await handle.terminate("test over")


async def test_a_rotation_reaches_a_running_codec_without_a_restart(tmp_path: Path) -> None:
    """Another process rotates the shared ring and seals with the new key: this one reads the
    file again when it meets the key, and still opens what the old key sealed."""
    path = tmp_path / "identity" / "payload-keys.json"
    KeyRing.local(tmp_path)
    running = EncryptionCodec(KeyRing.from_file(path), reload=lambda: KeyRing.from_file(path))
    (old,) = await running.encode([PLAIN])
    kid = rotate(path)
    (new,) = await EncryptionCodec(KeyRing.from_file(path)).encode([PLAIN])
    assert new.metadata[KEY_ID] == kid.encode() != old.metadata[KEY_ID]
    assert await running.decode([new, old]) == [PLAIN, PLAIN]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_keys_rotate_and_list_name_key_ids_and_never_key_material(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLEDGER_")}
    env["AGENTLEDGER_DATA_DIR"] = str(tmp_path)

    def keys(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agentledger.cli", "keys", *args],
                              env=env, capture_output=True, text=True, check=False)  # fmt: skip

    rotated = keys("rotate")
    assert rotated.returncode == 0, rotated.stderr
    kid = rotated.stdout.splitlines()[0]
    listed = keys("list")
    assert listed.stdout.splitlines()[:2] == ["local-1", f"{kid}  (active)"]
    ring = KeyRing.local(tmp_path)
    material = [base64.b64encode(k).decode() for k in ring.keys.values()]
    assert not any(m in rotated.stdout + listed.stdout for m in material)
    missing = keys("list", "--file", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "payload key ring" in missing.stderr


@pytest.mark.temporal
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_runs_history_is_sealed_under_its_own_key_which_shredding_the_run_destroys(
    harness: Harness,
) -> None:
    """Every payload of a run's history names the run's own workflow key, kept in the ledger;
    once the run is shredded (retention here, erasure alike), a process that did not hold the key
    already opens none of them, and nothing new is sealed for the run."""
    run_id = await harness.start(REQUEST)
    (approval,) = await harness.in_inbox(run_id)
    await harness.decide(run_id, approval.approval_id, "ops_lead_1")
    await harness.finish(run_id)
    history = await harness.client.get_workflow_handle(run_id).fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes.input.payloads
    (kid,) = {p.metadata[KEY_ID] for p in started}
    assert kid.startswith(WORKFLOW_KEY_PREFIX.encode())
    raw = b"".join(event.SerializeToString() for event in history.events)
    assert raw.count(kid) > 10 and raw.count(kid) == raw.count(KEY_ID.encode())
    before = payload_codec(harness.settings)  # another process, as it were: nothing cached
    assert before is not None and len(await before.decode(started)) == 1

    later = datetime.now(UTC) + timedelta(days=2)
    assert retention.shred_expired(harness.runtime.ledger, {"*": 1}, later) == 1
    after = payload_codec(harness.settings)
    assert after is not None
    with pytest.raises(PayloadKeyMissing, match="its run's erasure destroyed"):
        await after.decode(started)
    with pytest.raises(PayloadKeyGone, match="content was erased"):
        await after.with_context(_context(run_id)).encode([PLAIN])


def _context(workflow_id: str) -> WorkflowSerializationContext:
    return WorkflowSerializationContext(namespace="default", workflow_id=workflow_id)


async def test_the_converter_binds_each_workflow_once_and_shares_its_own_converters(
    harness: Harness,
) -> None:
    """The SDK asks for a converter bound to a workflow at every activation and command: the
    same context gets the same one back, its payload converter is not rebuilt, and each
    workflow's payloads are sealed under that workflow's key, unbound ones under the ring."""
    converter = data_converter(harness.settings)
    bound = converter.with_context(_context("run-bound-a"))
    assert bound is converter.with_context(_context("run-bound-a"))
    assert bound.payload_converter is converter.payload_converter
    other = converter.with_context(_context("run-bound-b"))
    sealed = [await c.payload_codec.encode([PLAIN]) for c in (bound, other, converter)]  # type: ignore[union-attr]
    a, b, ring = (payloads[0].metadata[KEY_ID] for payloads in sealed)
    assert a != b and a.startswith(WORKFLOW_KEY_PREFIX.encode())
    assert b.startswith(WORKFLOW_KEY_PREFIX.encode()) and not ring.startswith(
        WORKFLOW_KEY_PREFIX.encode()
    )
