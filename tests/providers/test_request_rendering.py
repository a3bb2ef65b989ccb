"""What the client sends: trust-marked messages, the step's tools and schema, the cache key."""

from __future__ import annotations

import json

from agentledger.activities.models import ProviderClient, openai_compatible_profile
from bench.providers import packets
from bench.providers.chat_server import ChatServer
from bench.providers.recorded import decision


def _send(server: ChatServer, packet_name: str, **settings: object) -> dict[str, object]:
    packet = getattr(packets, packet_name)()
    server.script(decision({"type": "proceed_to_answer", "rationale": "known"}))
    profile = openai_compatible_profile(server.url, "gpt-4.1-mini", **settings)  # type: ignore[arg-type]
    ProviderClient(environ={}).decide(packet, profile)
    return server.requests[-1].body


def test_instructions_are_the_system_message_and_everything_else_is_marked_data(
    chat_server: ChatServer,
) -> None:
    body = _send(chat_server, "choose_next_action")
    system, user = body["messages"]  # type: ignore[misc]
    assert system["role"] == "system" and user["role"] == "user"
    assert "Verify the order before discussing eligibility." in system["content"]
    assert '<data id="' not in system["content"]
    assert '<data id="' in user["content"] and 'trust="user_claim"' in user["content"]
    assert "WORKING_STATE" in user["content"]


def test_only_the_steps_callable_tools_become_tool_definitions(chat_server: ChatServer) -> None:
    body = _send(chat_server, "choose_next_action")
    names = [t["function"]["name"] for t in body["tools"]]  # type: ignore[index,union-attr]
    assert names == [t.name for t in packets.choose_next_action().tools]
    assert "create_refund" not in names
    assert body["parallel_tool_calls"] is False


def test_a_step_without_callable_tools_sends_none_and_proposals_stay_text(
    chat_server: ChatServer,
) -> None:
    body = _send(chat_server, "draft_answer")
    assert "tools" not in body
    assert "create_refund" in json.dumps(body["messages"])


def test_the_output_schema_is_sent_as_structured_output_with_the_tag_required(
    chat_server: ChatServer,
) -> None:
    body = _send(chat_server, "draft_answer")
    sent = body["response_format"]["json_schema"]  # type: ignore[index]
    assert sent["name"] == "answer" and sent["strict"] is False
    assert sent["schema"]["required"][0] == "type"
    assert (
        sent["schema"]["properties"]
        == packets.draft_answer().output_schema.json_schema["properties"]
    )


def test_a_proposal_may_name_only_an_offered_tool_with_its_own_arguments(
    chat_server: ChatServer,
) -> None:
    """Constrained decoding (llama.cpp's grammar, a strict schema) then cannot produce a tool
    the step does not offer, or arguments its schema refuses; the gate still judges each call."""
    packet = packets.choose_next_action()
    body = _send(chat_server, "choose_next_action")
    schema = body["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    offered = schema["$defs"]["ToolCallProposal"]["anyOf"]
    assert [o["properties"]["tool"]["const"] for o in offered] == [
        *(t.name for t in packet.tools),
        *(a.name for a in packet.proposable_actions),
    ]
    get_order = next(o for o in offered if o["properties"]["tool"]["const"] == "get_order")
    expected = next(t.input_schema for t in packet.tools if t.name == "get_order")
    assert get_order["properties"]["arguments"] == expected
    assert get_order["required"] == ["tool", "arguments"]


def test_string_lengths_are_capped_only_when_the_profile_asks(chat_server: ChatServer) -> None:
    plain = _send(chat_server, "draft_answer")
    capped = _send(chat_server, "draft_answer", max_string_length=80)
    assert "maxLength" not in json.dumps(plain["response_format"])
    answer = capped["response_format"]["json_schema"]["schema"]["properties"]["answer"]  # type: ignore[index]
    assert answer["maxLength"] == 80


def test_the_packets_cache_key_goes_out_as_the_prompt_cache_key(chat_server: ChatServer) -> None:
    body = _send(chat_server, "choose_next_action")
    assert body["prompt_cache_key"] == packets.choose_next_action().cache_key
    assert "prompt_cache_key" not in _send(
        chat_server, "choose_next_action", send_prompt_cache_key=False
    )


def test_model_and_generation_settings_come_from_the_profile(chat_server: ChatServer) -> None:
    body = _send(
        chat_server,
        "choose_next_action",
        max_tokens=99,
        max_tokens_param="max_completion_tokens",
        seed=3,
        structured_output="json_object",
        native_tools=False,
    )
    assert body["model"] == "gpt-4.1-mini" and body["max_completion_tokens"] == 99
    assert body["seed"] == 3 and body["temperature"] == 0.0
    assert body["response_format"] == {"type": "json_object"} and "tools" not in body
