"""A pack's webhook mapping: checked when declared, carried by the built Pack, and at delivery
time a payload that does not validate or that the mapper refuses is ``PayloadRejected``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from agentledger.domain.webhooks import delivery_run_id, signature, signature_problem
from agentledger.packs.support import PACK
from agentledger.sdk import MappedOrder, PackDefinitionError, PayloadRejected, webhook
from tests.sdk.test_pack import pack_with

HELPDESK = PACK.webhooks["helpdesk"]


class Event(BaseModel):
    user: str
    text: str


def to_order(event: Event) -> MappedOrder:
    if event.text == "ignore me":
        raise PayloadRejected("told to ignore")
    return MappedOrder(request=event.text, requester=event.user)


def test_a_built_pack_carries_its_webhook_mappings() -> None:
    pack = pack_with()
    pack.webhook("events")(to_order)
    built = pack.build()
    order = built.webhooks["events"].order_for({"user": "usr_1", "text": "hello"})
    assert order == MappedOrder(request="hello", requester="usr_1")


def _untyped(event):  # type: ignore[no-untyped-def]
    return MappedOrder(request="x", requester="y")


def _dict_payload(event: dict[str, Any]) -> MappedOrder:
    return MappedOrder(request="x", requester="y")


def _returns_str(event: Event) -> str:
    return event.text


def _two(event: Event, extra: int) -> MappedOrder:
    return MappedOrder(request="x", requester="y")


@pytest.mark.parametrize(
    ("source", "mapper", "said"),
    [
        ("Events!", to_order, "source name"),
        ("events", _untyped, "annotated with a pydantic model"),
        ("events", _dict_payload, "annotated with a pydantic model"),
        ("events", _two, "one parameter"),
        ("events", _returns_str, "must return MappedOrder"),
    ],
)
def test_a_mapping_that_cannot_be_checked_is_refused_when_declared(
    source: str, mapper: Any, said: str
) -> None:
    with pytest.raises(PackDefinitionError, match=said):
        webhook(source, mapper)


def test_a_source_declared_twice_or_after_build_is_refused() -> None:
    pack = pack_with()
    pack.webhook("events")(to_order)
    with pytest.raises(PackDefinitionError, match="declared twice"):
        pack.webhook("events")(to_order)
    pack.build()
    with pytest.raises(PackDefinitionError, match="after build"):
        pack.webhook("more")(to_order)


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        ({"user": "usr_1"}, "text: Field required"),
        ([1, 2], "payload: Input should be"),
        ({"user": "usr_1", "text": "ignore me"}, "told to ignore"),
        ({"user": "usr_1", "text": ""}, "request"),
    ],
)
def test_a_payload_that_does_not_map_is_rejected_with_why(payload: object, said: str) -> None:
    mapping = webhook("events", to_order)
    with pytest.raises((PayloadRejected, ValueError), match=said):
        mapping.order_for(payload)


def test_the_support_helpdesk_maps_open_tickets_only() -> None:
    open_ticket = {"ticket_id": "T-1", "customer_id": "usr_73", "status": "open", "text": "Hi"}
    assert HELPDESK.order_for(open_ticket).requester == "usr_73"
    with pytest.raises(PayloadRejected, match="only open tickets"):
        HELPDESK.order_for({**open_ticket, "status": "closed"})


NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
SECRET = b"s" * 32


def test_a_signature_binds_the_timestamp_the_delivery_id_and_the_body() -> None:
    stamp = str(int(NOW.timestamp()))
    good = signature(SECRET, stamp, "d1", b"{}")

    def judge(**changed: Any) -> str | None:
        given: dict[str, Any] = {"timestamp": stamp, "delivery_id": "d1", "sent": good,
                                 "body": b"{}", "now": NOW, **changed}  # fmt: skip
        return signature_problem(SECRET, **given)

    assert judge() is None
    assert judge(body=b"{ }") == "invalid-signature"
    assert judge(delivery_id="d2") == "invalid-signature"
    assert judge(timestamp=str(int(NOW.timestamp()) + 1)) == "invalid-signature"
    assert judge(sent=None) == "missing-signature"
    assert judge(now=NOW + timedelta(minutes=6)) == "stale-delivery"
    assert judge(now=NOW - timedelta(minutes=6)) == "stale-delivery"
    assert judge(now=NOW + timedelta(minutes=4)) is None


def test_a_delivery_always_names_the_same_run_and_no_other_delivery_does() -> None:
    assert delivery_run_id("support", "helpdesk", "d1") == delivery_run_id(
        "support", "helpdesk", "d1"
    )
    others = {
        delivery_run_id("support", "helpdesk", "d2"),
        delivery_run_id("support", "other", "d1"),
        delivery_run_id("supporthelpdesk", "", "d1"),
    }
    assert delivery_run_id("support", "helpdesk", "d1") not in others
