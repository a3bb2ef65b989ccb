"""The chat request keeps every untrusted string inside the user message's ``<data>`` blocks:
the system message holds only runtime directives, whatever a tool or user wrote."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from agentledger.activities.models import messages
from agentledger.activities.models._settings import ProviderSettings
from agentledger.domain.context.markers import marker_starts
from tests.domain.test_context_markers import (
    ESCAPED_BEFORE,
    HOSTILE,
    PREAMBLE_MENTION,
    _hostile_packet,
    assert_only_runtime_markers,
)

SETTINGS = ProviderSettings(base_url="http://127.0.0.1:1")


def _check(s: str) -> None:
    packet = _hostile_packet(s)
    system, user = messages(packet, SETTINGS)
    assert isinstance(system, dict) and isinstance(user, dict)
    text = str(system["content"])
    assert [text[i:].startswith(PREAMBLE_MENTION) for i in marker_starts(text)] == [True]
    assert_only_runtime_markers(str(user["content"]), packet)


def test_known_escapes_stay_fenced_in_the_chat_request() -> None:
    for s in ESCAPED_BEFORE:
        _check(s)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE)
def test_any_untrusted_string_stays_fenced_in_the_chat_request(s: str) -> None:
    _check(s)
