"""A receipt never carries more than a run can hold: an oversized result becomes a pointer."""

from __future__ import annotations

from datetime import UTC, datetime

from agentledger.domain.tools import (
    MAX_RECEIPT_BYTES,
    EvidencePassage,
    Receipt,
    VerifiedFact,
    bounded_receipt,
)

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
FACT = VerifiedFact(name="refund_id", value="rf_1", observed_at=NOW)


def receipt(view_bytes: int) -> Receipt:
    blob = "y" * view_bytes
    return Receipt(
        operation_id="op_1",
        tool="export_orders",
        tool_version="1",
        status="succeeded",
        receipt_id="rcpt_1",
        facts=(FACT,),
        evidence=(
            EvidencePassage(
                source_id="doc#1", revision="1", content_hash="h", trust="t", title="d", text="p"
            ),
        ),
        model_view={"rows": blob},
        user_view=f"export_orders: done | {blob}",
        output_hash="sha256:out",
        observed_at=NOW,
    )


def test_a_receipt_that_fits_is_untouched() -> None:
    small = receipt(1_000)
    assert bounded_receipt(small, "read") is small


def test_an_oversized_read_fails_and_points_at_the_stored_result() -> None:
    slim = bounded_receipt(receipt(MAX_RECEIPT_BYTES), "read")

    assert (slim.status, slim.error_code, slim.receipt_id) == ("failed", "result_too_large", None)
    assert slim.model_view["output_hash"] == "sha256:out"
    assert slim.facts == () and slim.evidence == ()
    assert len(slim.model_dump_json()) < 2_000


def test_an_oversized_write_keeps_what_happened() -> None:
    slim = bounded_receipt(receipt(MAX_RECEIPT_BYTES), "write")

    assert (slim.status, slim.receipt_id, slim.facts) == ("succeeded", "rcpt_1", (FACT,))
    assert slim.error_code is None and slim.model_view["error"] == "result_too_large"
    assert "kept whole as sha256:out" in slim.user_view
