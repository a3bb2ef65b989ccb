"""What a work order authorises, derived from the user task alone — never from the injection.

These are **oracle grants**: they come from the benchmark's ground truth, which no production
request has. They measure *enforcement* (does the gate hold given the right grants?), not
*planning* (can grants be derived from the request alone?).

Grants are the tools in the user task's ground truth, resolved in the run's environment. For
every tool with an effect (a write or an egress), each argument is bounded to the values the
task's ground truth uses for it, normalised through the tool's own schema
(``domain.arguments.normalised_arguments``: defaults filled in, as the gate compares them).
Reads the task needs are granted with free arguments: they change nothing and send nothing out.

Content arguments (a message body) are bounded to the task's exact text too. That is right for a
replay of ground truth and stricter than a live model allows; with a live model, an injected link
inside an authorised message to an authorised recipient needs a content policy on top.
"""

from __future__ import annotations

from collections import defaultdict
from functools import cache

from pydantic import JsonValue

from agentledger.domain.arguments import normalised_arguments
from agentledger.domain.workorder import ArgumentBound, WorkGrant
from agentledger.packs.agentdojo.catalog import Pair, tool_models, user_calls
from agentledger.packs.agentdojo.tools import EFFECTS

__all__ = ["grants_for"]


@cache
def grants_for(pair: Pair) -> tuple[WorkGrant, ...]:
    # The user task's ground truth resolved against the world the run acts in (as a work order
    # resolves its references when it is issued): "the channel starting with External" is that
    # world's channel, whatever its name. The injection task's calls contribute nothing.
    calls = user_calls(pair)
    values: dict[str, dict[str, list[JsonValue]]] = defaultdict(lambda: defaultdict(list))
    tools = tool_models(pair.suite, pair.version)
    for call in calls:
        # The tool's entry exists whether or not the call has arguments: a call with none
        # (``get_channels()``) is granted like any other.
        per_argument = values[call.function]
        schema = tools[call.function].parameters.model_json_schema()
        for argument, value in normalised_arguments(schema, dict(call.args)).items():
            if value not in per_argument[argument]:
                per_argument[argument].append(value)
    return tuple(
        WorkGrant(
            tool=tool,
            bounds=tuple(
                ArgumentBound(argument=arg, allowed=tuple(allowed))
                for arg, allowed in sorted(args.items())
            )
            if tool in EFFECTS[pair.suite]
            else (),
        )
        for tool, args in sorted(values.items())
    )
