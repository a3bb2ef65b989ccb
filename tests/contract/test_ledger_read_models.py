"""Read models (runs, approvals inbox, receipts) move with the log, in the same transaction."""

from __future__ import annotations

from datetime import timedelta

from agentledger.activities.ledger import Ledger
from bench.factories import T0, RunScript, refund_run


def test_a_run_waits_for_approval_then_completes(ledger: Ledger) -> None:
    waiting = refund_run(finish=False)
    ledger.append(waiting.events[:6])
    ledger.append(waiting.events[6:])

    run = ledger.get_run("run-1")
    assert run is not None
    assert (run.status, run.pack, run.principal_id, run.tenant_id) == (
        "awaiting_approval",
        "support",
        "usr_73",
        "acme",
    )
    assert run.request_text.startswith("Can I get a refund")
    assert run.last_seq == waiting.seq and run.updated_at == waiting.now
    [approval] = ledger.approvals()
    assert (approval.approval_id, approval.status, approval.tool) == (
        "appr_1",
        "pending",
        "create_refund",
    )
    assert approval.arguments == {"order_id": "ord_4821", "amount": 42.5, "currency": "EUR"}
    assert (approval.requested_by, approval.approver_role) == ("usr_73", "approver")
    assert approval.expires_at == waiting.events[-1].expires_at  # type: ignore[union-attr]

    done = refund_run()
    ledger.append(done.events[waiting.seq :])

    run = ledger.get_run("run-1")
    assert run is not None and run.status == "completed" and run.last_seq == done.seq
    assert run.answer == "Your refund of 42.50 EUR was created."
    assert run.cited_source_ids == ("returns-2026-08#late-delivery",)
    assert run.created_at == T0 + timedelta(seconds=1) and run.updated_at == done.now
    assert ledger.approvals() == []
    [granted] = ledger.approvals(status="granted")
    grant = done.events[waiting.seq]
    assert (granted.decided_by, granted.updated_at) == ("mgr_1", grant.recorded_at)


def test_receipts_list_every_settled_call_of_the_run(ledger: Ledger) -> None:
    ledger.append(refund_run().events)

    receipts = ledger.receipts("run-1")

    assert [(r.operation_id, r.tool, r.status) for r in receipts] == [
        ("op_104", "get_order", "succeeded"),
        ("op_105", "search_returns_policy", "succeeded"),
        ("op_106", "create_refund", "succeeded"),
    ]
    assert receipts[-1].idempotency_key == "idem-run-1-op_106"
    assert receipts[-1].receipt_id == "rcpt-op_106"


def test_an_in_doubt_receipt_is_replaced_when_reconciliation_settles_it(ledger: Ledger) -> None:
    script = RunScript()
    script.started()
    script.authorise("op_1", "create_refund", {"amount": 5}, write=True)
    script.receipt("op_1", "create_refund", "in_doubt", write=True)
    ledger.append(script.events)
    assert [r.status for r in ledger.receipts("run-1")] == ["in_doubt"]

    settled = script.receipt("op_1", "create_refund", "succeeded", write=True)
    ledger.append([settled])

    [receipt] = ledger.receipts("run-1")
    assert (receipt.status, receipt.seq, receipt.receipt_id) == (
        "succeeded",
        settled.seq,
        "rcpt-op_1",
    )


def test_a_rejected_approval_leaves_the_inbox_and_the_run_running(ledger: Ledger) -> None:
    script = RunScript()
    script.started()
    script.request_approval("appr_1", "op_1", "create_refund", {"amount": 5})
    script.request_approval("appr_2", "op_2", "create_refund", {"amount": 6})
    ledger.append(script.events)
    assert {a.approval_id for a in ledger.approvals(run_id="run-1")} == {"appr_1", "appr_2"}

    ledger.append([script.reject("appr_1", "outside policy")])
    run = ledger.get_run("run-1")
    assert run is not None and run.status == "awaiting_approval"  # appr_2 still pending

    ledger.append([script.expire("appr_2")])
    run = ledger.get_run("run-1")
    assert run is not None and run.status == "running"
    assert ledger.approvals() == []
    rejected, expired = ledger.approvals(status=None, run_id="run-1")
    assert (rejected.status, rejected.reason, rejected.decided_by) == (
        "rejected",
        "outside policy",
        "mgr_1",
    )
    assert (expired.status, expired.decided_by) == ("expired", None)


def test_a_failed_run_records_why(ledger: Ledger) -> None:
    script = RunScript()
    script.started()
    script.fail("insufficient_context", "the order could not be verified")
    ledger.append(script.events)

    run = ledger.get_run("run-1")
    assert run is not None and run.status == "failed"
    assert run.failure_reason == "insufficient_context: the order could not be verified"


def test_re_appending_leaves_read_models_untouched(ledger: Ledger) -> None:
    events = refund_run().events
    ledger.append(events)
    before = (ledger.get_run("run-1"), ledger.approvals(None), ledger.receipts("run-1"))

    ledger.append(events)
    ledger.append(events[:4])

    assert (ledger.get_run("run-1"), ledger.approvals(None), ledger.receipts("run-1")) == before


def test_rebuilding_from_the_log_reproduces_the_read_models(ledger: Ledger) -> None:
    for i, finish in enumerate((True, False, True)):
        ledger.append(refund_run(f"run-{i}", start=T0 + timedelta(hours=i), finish=finish).events)
    before = (
        ledger.list_runs(),
        ledger.approvals(None),
        [ledger.receipts(f"run-{i}") for i in range(3)],
    )

    assert ledger.rebuild_read_models() == 18 + 14 + 18
    assert ledger.rebuild_read_models("run-1") == 14

    after = (
        ledger.list_runs(),
        ledger.approvals(None),
        [ledger.receipts(f"run-{i}") for i in range(3)],
    )
    assert after == before


def test_runs_are_listed_newest_first_and_filter_by_status(ledger: Ledger) -> None:
    for i, finish in enumerate((True, False, True)):
        ledger.append(refund_run(f"run-{i}", start=T0 + timedelta(hours=i), finish=finish).events)

    assert [r.run_id for r in ledger.list_runs()] == ["run-2", "run-1", "run-0"]
    assert [r.run_id for r in ledger.list_runs(limit=1)] == ["run-2"]
    assert [r.run_id for r in ledger.list_runs(status="awaiting_approval")] == ["run-1"]
    assert ledger.list_runs(tenant_id="elsewhere") == []
    assert ledger.get_run("nope") is None


def test_a_retry_that_overlaps_stored_events_still_moves_the_run_on(ledger: Ledger) -> None:
    events = refund_run().events
    ledger.append(events[:5])

    ledger.append(events[:12])
    run = ledger.get_run("run-1")
    assert run is not None and (run.last_seq, run.updated_at) == (12, events[11].recorded_at)

    ledger.append(events)
    run = ledger.get_run("run-1")
    assert run is not None and (run.status, run.last_seq) == ("completed", len(events))
    assert run.updated_at == events[-1].recorded_at


def test_a_whole_run_in_one_append_lands_complete(ledger: Ledger) -> None:
    events = refund_run().events

    ledger.append(events)

    run = ledger.get_run("run-1")
    assert run is not None and (run.status, run.last_seq) == ("completed", len(events))
    assert (run.created_at, run.updated_at) == (events[0].recorded_at, events[-1].recorded_at)
