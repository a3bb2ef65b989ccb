"""A2A: every pack is an agent other agents can call (the A2A protocol, ``a2a-sdk``'s server
types and JSON-RPC dispatcher).

Each pack's agent card is at ``/a2a/{pack}/.well-known/agent-card.json`` (skills from its step
graph, the bearer scheme of the configured issuers); its JSON-RPC endpoint is ``/a2a/{pack}``.
A task *is* a run: its id is the run id, and its state is read from the run, never kept here, so
a server restart loses nothing. ``SendMessage`` without a task id starts a run as the verified
caller (nobody starts a run in another's name); with one it is the caller's reply to the run.
States: ``input-required`` while the run waits on its customer, ``auth-required`` while it waits
on an approval (which only an approver decides, through the API or the inbox, signed),
``completed``, ``failed``, ``canceled``. The same tokens, tenants and visibility rules as the
API apply: another tenant's run is not found.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_agent_card_routes
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agentledger.activities.ledger import RunFilter
from agentledger.activities.ports import Pack
from agentledger.api import actions
from agentledger.api.a2a_tasks import task_of
from agentledger.api.auth import Caller, bearer_token
from agentledger.api.deps import ApiContext, is_staff, visible_run
from agentledger.api.problems import ApiProblem
from agentledger.app import runs as client_ops

PREFIX = "/a2a"
SETTLE_SECONDS = 60.0
"""How long a blocking ``SendMessage`` waits for the run to park or end before it returns the
task as ``working`` (the caller then polls ``GetTask``)."""

_CANCELABLE = frozenset(
    {
        pb.TASK_STATE_SUBMITTED,
        pb.TASK_STATE_WORKING,
        pb.TASK_STATE_INPUT_REQUIRED,
        pb.TASK_STATE_AUTH_REQUIRED,
    }
)
_MOVING = frozenset({pb.TASK_STATE_SUBMITTED, pb.TASK_STATE_WORKING})


def card(pack: Pack, base_url: str) -> pb.AgentCard:
    """The pack as an agent: one skill per step of its graph, the tools each may use."""
    profile = pack.profile
    return pb.AgentCard(
        name=pack.name,
        description=f"agentledger pack {pack.name} ({profile.profile_id} "
        f"{profile.agent_version}): consequential actions wait for a signed human approval",
        supported_interfaces=[
            pb.AgentInterface(
                url=f"{base_url}{PREFIX}/{pack.name}",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        version=profile.agent_version,
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            "bearer": pb.SecurityScheme(
                http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="JWT",
                    description="a token from an issuer this service trusts",
                )
            )
        },
        security_requirements=[pb.SecurityRequirement(schemes={"bearer": pb.StringList()})],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=_skills(pack),
    )


def _skills(pack: Pack) -> list[pb.AgentSkill]:
    """One skill per step of the pack's graph: the tools it uses, the actions it proposes."""
    sample = [pack.sample.request] if pack.sample else []
    return [
        pb.AgentSkill(
            id=f"{pack.name}.{step.name}",
            name=step.name.replace("_", " "),
            description=_skill_text(step.allowed_tools, step.proposable_actions),
            tags=[pack.name],
            examples=sample,
        )
        for step in pack.profile.step_profiles
    ]


def _skill_text(tools: tuple[Any, ...], proposes: tuple[Any, ...]) -> str:
    names = [getattr(t, "name", str(t)) for t in tools]
    proposed = [getattr(t, "name", str(t)) for t in proposes]
    said = f"uses {', '.join(names)}" if names else "answers from what it was given"
    return f"{said}; proposes {', '.join(proposed)} (approved by a person)" if proposed else said


class RunsAsTasks(RequestHandler):
    """The A2A methods over one pack's runs."""

    def __init__(self, ctx: ApiContext, pack: Pack, agent_card: pb.AgentCard) -> None:
        self._ctx = ctx
        self._pack = pack
        self._card = agent_card

    async def on_message_send(
        self, params: pb.SendMessageRequest, context: ServerCallContext
    ) -> pb.Task:
        caller = _caller(context)
        run_id = await self._send(params.message, caller)
        if not params.configuration.return_immediately:
            await self._settled(run_id)
        return await self._task(caller, run_id)

    async def on_message_send_stream(
        self, params: pb.SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[pb.Task | pb.TaskStatusUpdateEvent]:
        caller = _caller(context)
        run_id = await self._send(params.message, caller)
        async for event in self._follow(caller, run_id):
            yield event

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task:
        return await self._task(_caller(context), params.id)

    async def on_list_tasks(
        self, params: pb.ListTasksRequest, context: ServerCallContext
    ) -> pb.ListTasksResponse:
        caller = _caller(context)
        p = caller.principal
        scope = RunFilter(
            tenant_id=p.tenant_id,
            principal_id=None if is_staff(caller) else p.user_id,
            pack=self._pack.name,
        )
        rows = await asyncio.to_thread(self._ctx.ledger.search_runs, scope, 100)
        tasks = [await self._task(caller, row.run_id) for row in rows]
        return pb.ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def on_cancel_task(
        self, params: pb.CancelTaskRequest, context: ServerCallContext
    ) -> pb.Task:
        """The requester (or staff of the tenant) withdraws the request: the run is cancelled
        through Temporal, which records its end and expires its pending approvals."""
        caller = _caller(context)
        task = await self._task(caller, params.id)
        if task.status.state not in _CANCELABLE:
            raise TaskNotCancelableError(message=f"task {params.id} has ended")
        await client_ops.cancel(self._ctx.client, params.id)
        await self._settled(params.id, until=_CANCELABLE)
        return await self._task(caller, params.id)

    async def on_subscribe_to_task(
        self, params: pb.SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[pb.Task | pb.TaskStatusUpdateEvent]:
        async for event in self._follow(_caller(context), params.id):
            yield event

    async def on_create_task_push_notification_config(self, *_: Any) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_get_task_push_notification_config(self, *_: Any) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_list_task_push_notification_configs(self, *_: Any) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_delete_task_push_notification_config(self, *_: Any) -> Any:
        raise PushNotificationNotSupportedError()

    async def on_get_extended_agent_card(self, *_: Any) -> Any:
        raise UnsupportedOperationError(message="this agent has no extended card")

    async def _send(self, message: pb.Message, caller: Caller) -> str:
        text = "\n".join(part.text for part in message.parts if part.text).strip()
        if not text:
            raise InvalidParamsError(message="the message has no text part")
        try:
            if not message.task_id:
                run_id = await actions.start_run(self._ctx, caller, self._pack.name, text)
                await self._settled(run_id, until=frozenset())  # in the ledger: a task to show
                return run_id
            task = await self._task(caller, message.task_id)
            if task.status.state != pb.TASK_STATE_INPUT_REQUIRED:
                state = pb.TaskState.Name(task.status.state)
                raise InvalidParamsError(
                    message=f"task {message.task_id} takes no message now ({state})"
                )
            await actions.reply(self._ctx, caller, message.task_id, text)
            return message.task_id
        except ApiProblem as exc:
            raise InvalidParamsError(message=f"{exc.slug}: {exc.detail}") from None

    async def _task(self, caller: Caller, run_id: str) -> pb.Task:
        def read() -> pb.Task:
            try:
                row = visible_run(self._ctx, caller, run_id, action="a2a")
            except ApiProblem:
                raise TaskNotFoundError(message=f"no task {run_id}") from None
            if row.pack != self._pack.name:
                raise TaskNotFoundError(message=f"no task {run_id} for agent {self._pack.name}")
            return task_of(row, self._ctx.ledger.read(run_id))

        return await asyncio.to_thread(read)

    async def _settled(self, run_id: str, *, until: frozenset[int] = _MOVING) -> None:
        """Until the ledger shows the run out of ``until`` (by default: parked on an approval
        or its customer, or ended); a run still there after ``SETTLE_SECONDS`` is returned as
        it is."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SETTLE_SECONDS
        while loop.time() < deadline:
            row = await asyncio.to_thread(self._ctx.ledger.get_run, run_id)
            events = await asyncio.to_thread(self._ctx.ledger.read, run_id)
            if row is not None and task_of(row, events).status.state not in until:
                return
            await asyncio.sleep(0.1)

    async def _follow(
        self, caller: Caller, run_id: str
    ) -> AsyncGenerator[pb.Task | pb.TaskStatusUpdateEvent]:
        """The task, then each change of its state until it parks or ends."""
        task = await self._task(caller, run_id)
        yield task
        seen = task.status.state
        while seen in _MOVING:
            await asyncio.sleep(0.2)
            task = await self._task(caller, run_id)
            if task.status.state != seen:
                seen = task.status.state
                yield pb.TaskStatusUpdateEvent(
                    task_id=run_id, context_id=run_id, status=task.status
                )


def _caller(context: ServerCallContext) -> Caller:
    caller: Caller = context.state["caller"]
    return caller


class _VerifiedCaller(DefaultServerCallContextBuilder):
    """The SDK's context (headers, the protocol version asked for) and the verified caller."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state["caller"] = request.state.caller
        return context


def routes(ctx: ApiContext, packs: dict[str, Pack], base_url: str) -> list[Route]:
    """Each pack's card (public, as the protocol says) and its JSON-RPC endpoint (bearer)."""
    found: list[Route] = []
    for name, pack in sorted(packs.items()):
        agent_card = card(pack, base_url)
        dispatcher = JsonRpcDispatcher(
            request_handler=RunsAsTasks(ctx, pack, agent_card),
            context_builder=_VerifiedCaller(),
        )
        found += create_agent_card_routes(
            agent_card, card_url=f"{PREFIX}/{name}/.well-known/agent-card.json"
        )
        found.append(Route(f"{PREFIX}/{name}", _authenticated(ctx, dispatcher), methods=["POST"]))
    return found


def _authenticated(ctx: ApiContext, dispatcher: JsonRpcDispatcher) -> Any:
    async def endpoint(request: Request) -> Response:
        token = bearer_token(request.headers.get("authorization"))
        try:
            if token is None:
                raise ApiProblem(401, "unauthenticated", "A2A needs 'Authorization: Bearer'")
            request.state.caller = ctx.authenticator.verify(token)
        except ApiProblem as exc:
            return Response(
                exc.detail,
                status_code=exc.status,
                headers={"WWW-Authenticate": 'Bearer realm="agentledger"'},
                media_type="text/plain",
            )
        return await dispatcher.handle_requests(request)

    return endpoint
