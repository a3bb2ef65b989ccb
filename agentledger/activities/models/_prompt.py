"""A ContextPacket as what every provider is sent: a system text, a user text, tools and schema.

Provider-neutral; each SDK adapter (``_openai_chat``, ``_openai_responses``, ``_anthropic``) puts
these pieces into its own request type. Trusted runtime directives (the step's fixed prefix and
the instructions) form the system text, which is also the stable prefix a provider's prompt cache
can reuse. Everything else goes in the user text inside ``<data>`` blocks that carry id, kind,
source and trust level, exactly as ``domain.context.render`` writes them, so the text matches what
the token estimate measured. Only the packet's callable tools become tool definitions; proposable
actions stay text. Under ``decisions="tools"`` the step's other decisions (``proceed_to_answer``,
``ask_user``, the answer, ...) are tools too, one per variant of the step's output schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import JsonValue, ValidationError

from agentledger.activities.models._settings import ProviderSettings
from agentledger.domain.context import ContextPacket
from agentledger.domain.context.render import render_fixed, render_parts
from agentledger.domain.manifest import ModelProfile

CALL_TOOL = "call_tool"
_REPLY_RULE = "\nReply with exactly one JSON object that matches OUTPUT_SCHEMA and nothing else."
_TOOL_RULE = " To call a tool, either call it natively or return a call_tool object."
_TOOLS_RULE = (
    "\nReply by calling exactly one of the tools offered: a granted tool to act, or the tool "
    "named after the decision (OUTPUT_SCHEMA's type) with that decision's other fields."
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, JsonValue]


def messages(packet: ContextPacket, settings: ProviderSettings) -> list[JsonValue]:
    """The prompt as chat messages: what chat completions posts, and what views show."""
    system, user = prompt(packet, settings)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def prompt(packet: ContextPacket, settings: ProviderSettings) -> tuple[str, str]:
    """(system, user): the fixed prefix with trusted parts, and the marked data."""
    if settings.decisions == "tools":
        rule = _TOOLS_RULE
    else:
        rule = _REPLY_RULE + (_TOOL_RULE if offers_tools(packet, settings) else "")
    system, user = render_fixed(packet) + rule, ""
    for trusted, text in render_parts(packet):
        if trusted:
            system += text
        else:
            user += text
    return system, user.strip() or "(no further context)"


def offers_tools(packet: ContextPacket, settings: ProviderSettings) -> bool:
    return settings.decisions == "tools" or (settings.native_tools and bool(packet.tools))


def tools(packet: ContextPacket, settings: ProviderSettings) -> list[ToolSpec]:
    """The tools a request offers: the step's callable tools, then its decisions as tools."""
    granted = [ToolSpec(t.name, t.description, dict(t.input_schema)) for t in packet.tools]
    if settings.decisions != "tools":
        return granted if settings.native_tools else []
    taken = {t.name for t in granted}
    return granted + [t for t in decision_tools(packet, settings) if t.name not in taken]


def decision_tools(packet: ContextPacket, settings: ProviderSettings) -> list[ToolSpec]:
    """One tool per decision the step's schema allows, other than calling a tool (the granted
    tools are that); its parameters are the decision's fields less the ``type`` tag."""
    schema = packet.output_schema.json_schema
    defs = schema.get("$defs")
    found: list[ToolSpec] = []
    for tag, variant in schema_variants(schema).items():
        if tag == CALL_TOOL:
            continue
        properties = variant.get("properties")
        fields = dict(properties) if isinstance(properties, dict) else {}
        fields.pop("type", None)
        required = variant.get("required")
        parameters: dict[str, JsonValue] = {
            "type": "object",
            "properties": fields,
            "required": [r for r in required if r != "type"] if isinstance(required, list) else [],
        }
        if isinstance(defs, dict):
            parameters["$defs"] = defs
        sent = request_schema(parameters, settings.max_string_length)
        description = variant.get("description")
        text = description if isinstance(description, str) else f"Decide: {tag}."
        found.append(ToolSpec(tag, text, sent if isinstance(sent, dict) else parameters))
    return found


def schema_variants(schema: dict[str, JsonValue]) -> dict[str, dict[str, JsonValue]]:
    """The step's decisions by ``type`` tag: the ``oneOf`` members (resolved through ``$defs``),
    or the schema itself when it is one decision."""
    defs = schema.get("$defs")
    members = schema.get("oneOf") or schema.get("anyOf") or [schema]
    variants: dict[str, dict[str, JsonValue]] = {}
    for member in members if isinstance(members, list) else []:
        node = member
        if isinstance(node, dict) and isinstance(ref := node.get("$ref"), str):
            node = defs.get(ref.rsplit("/", 1)[-1]) if isinstance(defs, dict) else None
        if not isinstance(node, dict):
            continue
        properties = node.get("properties")
        tag = properties.get("type") if isinstance(properties, dict) else None
        if isinstance(tag, dict) and isinstance(tag.get("const"), str):
            variants[str(tag["const"])] = node
    return variants


def output_schema(packet: ContextPacket, settings: ProviderSettings) -> JsonValue:
    """The step's schema as sent, when the decision is a JSON object. A proposal is one of the
    tools the packet offers (callable or proposable) with that tool's own argument schema, so a
    model under constrained decoding can neither invent a tool nor malform its arguments. The
    gate still judges every call as before."""
    sent = request_schema(packet.output_schema.json_schema, settings.max_string_length)
    defs = sent.get("$defs") if isinstance(sent, dict) else None
    offered = [*packet.tools, *packet.proposable_actions]
    if isinstance(defs, dict) and "ToolCallProposal" in defs and offered:
        defs["ToolCallProposal"] = {
            "anyOf": [_proposal_of(t.name, t.input_schema) for t in offered]
        }
    return sent


def text_format(
    packet: ContextPacket, settings: ProviderSettings, *, nested: bool
) -> dict[str, JsonValue] | None:
    """How the reply's text is constrained when the decision comes as text (``None``: it is
    not). ``nested``: the schema under ``json_schema``, as Chat Completions' ``response_format``
    has it; the Responses API's ``text.format`` holds it flat."""
    if settings.decisions == "tools" or settings.structured_output == "none":
        return None
    if settings.structured_output == "json_object":
        return {"type": "json_object"}
    schema: dict[str, JsonValue] = {
        "name": packet.output_schema.name,
        "schema": output_schema(packet, settings),
        "strict": settings.strict_schema,
    }
    return (
        {"type": "json_schema", "json_schema": schema}
        if nested
        else {"type": "json_schema", **schema}
    )


def _proposal_of(tool: str, arguments: Mapping[str, JsonValue]) -> JsonValue:
    return {
        "type": "object",
        "properties": {"tool": {"const": tool}, "arguments": dict(arguments)},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def request_schema(node: JsonValue, max_string_length: int | None) -> JsonValue:
    """The step's schema as sent: the ``type`` tag required (the decision union needs it,
    though pydantic marks it optional for having a default), and optionally a length cap on
    free strings so a small model rambling under constrained decoding still closes its JSON."""
    if isinstance(node, list):
        return [request_schema(n, max_string_length) for n in node]
    if not isinstance(node, dict):
        return node
    sent = {k: request_schema(v, max_string_length) for k, v in node.items()}
    properties = node.get("properties")
    tag = properties.get("type") if isinstance(properties, dict) else None
    if isinstance(tag, dict) and "const" in tag:
        required = node.get("required")
        names = required if isinstance(required, list) else []
        if "type" not in names:
            sent["required"] = ["type", *names]
    free = node.get("type") == "string" and not {"enum", "const", "maxLength"} & node.keys()
    if free and max_string_length is not None:
        sent["maxLength"] = max_string_length
    return sent


def sent_messages(packet: ContextPacket, profile: ModelProfile) -> list[JsonValue] | None:
    """The messages a provider is sent for ``packet`` under the run's frozen ``profile``,
    through the very path the request takes; ``None`` when the profile's model is not one (a
    scripted model or the offline playbook reads the packet's structure)."""
    try:
        settings = ProviderSettings.model_validate(profile.settings)
    except ValidationError:
        return None
    return messages(packet, settings)
