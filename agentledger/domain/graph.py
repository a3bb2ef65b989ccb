"""A pack's step graph and conversation policy: which step runs next, as data in the profile.

The graph is frozen into the manifest (so its hash covers it) and the loop is generic:
``run_loop.next_step(state, graph)`` reads the step a decision moved the run to. Each step keeps
its ``StepProfile`` (what it sees, calls and proposes); the graph says where a ``proceed``
decision may go from it and whether it may ask the user a question.

A manifest frozen before graphs existed has none: its run follows the two steps every such
profile had (``choose_next_action`` → ``draft_answer``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from agentledger.domain._model import Frozen
from agentledger.domain.errors import ManifestError

OutputSchemaName = Literal["classification", "next_action", "answer"]
"""The shape of a step's decision. "next_action": call a tool or proceed to another step;
"answer": answer the user (and perhaps propose a consequential action). "classification" is no
step's schema any more; manifests recorded before its removal still name it in a step nothing
runs, so it stays readable (recorded histories replay)."""


class StepGraphError(ManifestError):
    """A step graph that cannot run: an unknown, unreachable or dead-end step."""

    code = "step_graph_invalid"


class StepNode(Frozen):
    """One step of the graph.

    ``next``: the steps a ``proceed`` decision may move to (the first is where a ``proceed`` that
    names none goes). ``ask_user``: the step may ask the user a question and wait for the reply
    (the profile must have a conversation policy). ``on_insufficient_context``: when the context
    compiler refuses the step, fail the run (the default) or ask the user for what is missing.
    """

    name: str
    next: tuple[str, ...] = ()
    ask_user: bool = False
    on_insufficient_context: Literal["fail", "ask_user"] = "fail"


class StepGraph(Frozen):
    entry: str
    nodes: tuple[StepNode, ...] = Field(min_length=1)

    def node(self, name: str) -> StepNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise StepGraphError(f"the step graph has no step {name!r}")

    def names(self) -> tuple[str, ...]:
        return tuple(node.name for node in self.nodes)

    @classmethod
    def linear(cls, *steps: str, ask_user: Iterable[str] = ()) -> StepGraph:
        """Steps run in order: each proceeds to the next; the last one answers."""
        asking = set(ask_user)
        return cls(
            entry=steps[0],
            nodes=tuple(
                StepNode(name=step, next=tuple(steps[i + 1 : i + 2]), ask_user=step in asking)
                for i, step in enumerate(steps)
            ),
        )


LEGACY_STEPS = ("choose_next_action", "draft_answer")
"""The two steps of every profile frozen before step graphs existed."""


DoubleTexting = Literal["reject", "queue", "interrupt"]


class ConversationPolicy(Frozen):
    """A run that talks with its customer: it may wait for replies, and it stays open for
    follow-up messages after an answer until ``idle_timeout_seconds`` pass without one (a durable
    timer; the run then closes politely, recorded). ``max_turns`` bounds the customer's messages."""

    idle_timeout_seconds: int = Field(default=3 * 24 * 3600, gt=0)
    max_turns: int = Field(default=200, gt=0)
    closing_message: str = "This conversation was closed after a period without messages."
    double_texting: DoubleTexting = "reject"
    """What a customer's message does while the run is working (not waiting for them):
    ``reject`` it (``not_waiting``: send it when the run asks or answers); ``queue`` it (taken
    as the reply to the run's next question or answer); or ``interrupt``: taken at the run's
    next safe point, setting aside what it had decided and not yet done (a call in flight
    completes; a pending approval is withdrawn), the next step reading it from the entry."""

    @model_serializer(mode="wrap")
    def _without_defaults_added_later(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Policies frozen before double-texting keep their manifest hashes."""
        data = handler(self)
        if isinstance(data, dict) and data.get("double_texting") == "reject":
            data.pop("double_texting")
        return data


def check_graph(
    graph: StepGraph,
    step_schemas: dict[str, OutputSchemaName],
    *,
    conversation: ConversationPolicy | None,
) -> None:
    """Refuse a graph that cannot run (raises ``StepGraphError``): every step has a step profile
    and every profile a step; transitions name known steps; every step is reachable from the
    entry; from every step some answering step can be reached (no dead end); only a
    conversational profile may ask the user."""
    names = graph.names()
    if len(set(names)) != len(names):
        raise StepGraphError(f"the step graph names a step twice: {list(names)}")
    missing = set(names) ^ set(step_schemas)
    if missing:
        raise StepGraphError(
            f"steps and step profiles differ: {sorted(missing)} (each step needs exactly one "
            "step profile of the same name)"
        )
    if graph.entry not in names:
        raise StepGraphError(f"the entry step {graph.entry!r} is not in the graph")
    for node in graph.nodes:
        _check_node(node, names, step_schemas[node.name], conversation)
    reachable = _reachable(graph, graph.entry)
    unreachable = [n for n in names if n not in reachable]
    if unreachable:
        raise StepGraphError(f"steps unreachable from {graph.entry!r}: {unreachable}")
    answering = {n for n in names if step_schemas[n] == "answer"}
    stuck = [n for n in names if not (_reachable(graph, n) & answering)]
    if stuck:
        raise StepGraphError(f"steps from which no answering step can be reached: {stuck}")


def _check_node(
    node: StepNode,
    names: tuple[str, ...],
    schema: OutputSchemaName,
    conversation: ConversationPolicy | None,
) -> None:
    unknown = [n for n in node.next if n not in names]
    if unknown:
        raise StepGraphError(f"step {node.name!r} proceeds to unknown steps {unknown}")
    if schema == "answer" and node.next:
        raise StepGraphError(f"step {node.name!r} answers; it cannot also proceed")
    if schema != "answer" and not node.next:
        raise StepGraphError(
            f"step {node.name!r} is a dead end: it neither answers nor proceeds anywhere"
        )
    asks = node.ask_user or node.on_insufficient_context == "ask_user"
    if asks and conversation is None:
        raise StepGraphError(
            f"step {node.name!r} may ask the user, but the profile has no conversation policy"
        )


def _reachable(graph: StepGraph, start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph.node(todo.pop()).next:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
