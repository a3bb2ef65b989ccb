"""``ScriptedModel``: a deterministic stand-in for a model, written as one function per step.

Each function reads only the context packet (through ``PacketView``) and returns the decision as
the JSON a model would: a different packet gives a different decision, so a script can test a
pack's governance honestly (no proposal without the verified facts in the packet). The runtime
parses and governs a scripted decision exactly like a model's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import cast

from pydantic import JsonValue

from agentledger.activities.ports import ModelReply, ModelUsage
from agentledger.domain.context import ContextPacket, PacketItem
from agentledger.domain.manifest import ModelProfile
from agentledger.sdk._errors import PackDefinitionError

Decision = dict[str, JsonValue]
StepScript = Callable[["PacketView"], Mapping[str, object]]
"""A step's script: the decision as JSON (the runtime parses and validates it like a model's)."""


@dataclass(frozen=True)
class Turn:
    """One message of the conversation as the packet shows it."""

    role: str
    text: str


class PacketView:
    """Typed reading of one context packet: the request, the conversation, the working state
    (verified facts, completed actions, refusals, errors) and the tools the step may use.

    Look completed actions up by the resource they were about, never by tool alone: in a
    conversation the customer may ask about another card, order or subscription, and an earlier
    receipt about the first one says nothing about it. ``view.succeeded("extend_card",
    card_id=card)`` is the receipt to claim with ``answer(..., confirms=[...])``.
    """

    def __init__(self, packet: ContextPacket) -> None:
        self.packet = packet
        self.state = packet.working_state

    @property
    def step(self) -> str:
        """The step this packet was built for."""
        return self.packet.step

    @cached_property
    def request(self) -> str:
        """The opening request's text ("" when the step does not see it)."""
        items = self.packet.items_of_kind("user_request")
        return next((t for i in items if (t := _text(i.content)) is not None), "")

    @cached_property
    def turns(self) -> tuple[Turn, ...]:
        """The conversation turns in the packet, oldest first."""
        items = sorted(self.packet.items_of_kind("conversation_turn"), key=_turn_order)
        return tuple(
            Turn(role=_str(_dict(i.content).get("role")) or "user", text=text)
            for i in items
            if (text := _text(i.content)) is not None
        )

    def user_texts(self) -> tuple[str, ...]:
        """The request, then every message the customer wrote since, oldest first."""
        replies = tuple(t.text for t in self.turns if t.role == "user" and t.text != self.request)
        return (self.request, *replies) if self.request else replies

    def reference(self, name: str) -> str | None:
        """A reference the work order carries (``"order_id"``), or ``None``."""
        return _str(_dict(self.state.get("references")).get(name))

    @cached_property
    def facts(self) -> dict[str, JsonValue]:
        """Verified facts by ``"<resource_id>.<name>"``."""
        raw = _dict(self.state.get("verified_facts"))
        return {key: _dict(value).get("value") for key, value in raw.items()}

    def fact(self, resource_id: str, name: str) -> JsonValue:
        """One verified fact about one resource (``None`` when the packet holds none)."""
        return self.facts.get(f"{resource_id}.{name}")

    def resources_with(self, name: str) -> dict[str, JsonValue]:
        """``{resource_id: value}`` of one fact across every resource that has it, sorted."""
        suffix = "." + name
        return {
            k.removesuffix(suffix): v for k, v in sorted(self.facts.items()) if k.endswith(suffix)
        }

    def completed(self, tool: str, **resource: JsonValue) -> list[dict[str, JsonValue]]:
        """The completed calls of ``tool`` (any outcome), oldest first; with the contract's
        resource argument (``card_id="gc_1001"``) only those about that resource. Each is
        ``{tool, operation_id, status, receipt_id, resource_id}``."""
        calls = [a for a in self._list("completed_actions") if a.get("tool") == tool]
        if not resource:
            return calls
        wanted = _resource_value(tool, resource)  # None (no resource yet) matches no call
        return [a for a in calls if wanted is not None and a.get("resource_id") == wanted]

    def succeeded(self, tool: str, **resource: JsonValue) -> dict[str, JsonValue] | None:
        """The latest succeeded call of ``tool`` about ``resource`` (``card_id="gc_1001"``),
        or ``None``. Pass it to ``answer(confirms=[...])`` to report the effect."""
        done = [a for a in self.completed(tool, **resource) if a.get("status") == "succeeded"]
        return done[-1] if done else None

    def refused(self, tool: str) -> dict[str, JsonValue] | None:
        """The latest rejection of ``tool`` (denied by the gate or an approver)."""
        rejected = [r for r in self._list("rejected_options") if r.get("option") == tool]
        return rejected[-1] if rejected else None

    @property
    def errors(self) -> list[dict[str, JsonValue]]:
        """Unresolved errors (a failed call, an unknown outcome) a person may need to see."""
        return self._list("unresolved_errors")

    @property
    def pending_approvals(self) -> list[dict[str, JsonValue]]:
        """Proposals waiting on an approver."""
        return self._list("pending_approvals")

    def can_call(self, tool: str) -> bool:
        """Whether this step may call ``tool`` now."""
        return tool in self.packet.tool_names()

    def can_propose(self, tool: str) -> bool:
        """Whether this step may propose ``tool`` as a consequential next action."""
        return any(t.name == tool for t in self.packet.proposable_actions)

    def _list(self, field: str) -> list[dict[str, JsonValue]]:
        value = self.state.get(field)
        return [_dict(v) for v in value] if isinstance(value, list) else []


class ScriptedModel:
    """A ``ModelClient`` from ``{step name: function(PacketView) -> decision}``.

    ``profile`` is the ``ModelProfile`` naming it (provider = ``name``); give that to
    ``AgentPack(model=...)`` and the model itself in ``models=[...]``.
    """

    def __init__(self, name: str, steps: Mapping[str, StepScript], *, version: str = "v1") -> None:
        if not steps:
            raise PackDefinitionError(f"scripted model {name!r}", "it scripts no step")
        self.name = name
        self.steps = dict(steps)
        self.profile = ModelProfile(name=name, provider=name, model=f"{name}-{version}")

    def decide(self, packet: ContextPacket, profile: ModelProfile) -> ModelReply:
        script = self.steps.get(packet.step)
        if script is None:
            raise LookupError(f"scripted model {self.name!r} has no script for {packet.step!r}")
        output = cast(dict[str, JsonValue], dict(script(PacketView(packet))))
        return ModelReply(output=output, usage=ModelUsage(input_tokens=packet.total_tokens))


def call_tool(tool: str, arguments: Mapping[str, JsonValue], rationale: str = "") -> Decision:
    return {
        "type": "call_tool",
        "proposal": {"tool": tool, "arguments": dict(arguments)},
        "rationale": rationale,
    }


def proceed(to: str | None = None, rationale: str = "") -> Decision:
    return {"type": "proceed", "to": to, "rationale": rationale}


def ask_user(question: str, rationale: str = "") -> Decision:
    return {"type": "ask_user", "question": question, "rationale": rationale}


def answer(
    text: str,
    *,
    sources: Sequence[str] = (),
    confirms: Sequence[Mapping[str, JsonValue]] = (),
    propose: tuple[str, Mapping[str, JsonValue]] | None = None,
) -> Decision:
    """An answer. ``confirms``: the completed actions it reports as done, as
    ``PacketView.succeeded(tool, **resource)`` returned them; each becomes a claim of that
    operation, tool and resource, which the runtime checks against the receipt and delivers to
    the customer as the receipt's own confirmation line. ``text`` is free prose the runtime
    cannot check: state no effect in it that ``confirms`` does not carry.
    ``propose=(tool, arguments)`` asks for a consequential action (approval)."""
    proposal: JsonValue = None
    if propose is not None:
        proposal = {"tool": propose[0], "arguments": dict(propose[1])}
    claims: list[JsonValue] = [
        {
            "operation_id": done.get("operation_id"),
            "tool": done.get("tool"),
            "resource_id": done.get("resource_id"),
        }
        for done in confirms
    ]
    return {
        "type": "answer",
        "answer": text,
        "supporting_source_ids": list(dict.fromkeys(sources)),
        "claims": claims,
        "proposed_next_action": proposal,
    }


def _resource_value(tool: str, resource: Mapping[str, JsonValue]) -> str | None:
    if len(resource) > 1:
        raise TypeError(
            f"{tool}: look a completed action up by its contract's one resource argument, "
            f"not {', '.join(sorted(resource))}"
        )
    value = next(iter(resource.values()), None)
    return None if value is None else value if isinstance(value, str) else str(value)


def _turn_order(item: PacketItem) -> tuple[datetime, str]:
    return (item.created_at, item.id)


def _text(content: JsonValue) -> str | None:
    if isinstance(content, str):
        return content
    return _str(_dict(content).get("text"))


def _dict(value: JsonValue) -> dict[str, JsonValue]:
    return value if isinstance(value, dict) else {}


def _str(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None
