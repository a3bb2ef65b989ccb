"""``model_step``: the step's context packet built and stored with the outbox, then the
model asked and its reply parsed into a decision."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from agentledger.activities import _telemetry
from agentledger.activities._final import erased_is_final
from agentledger.activities.messages import ModelStepInput, ModelStepResult
from agentledger.activities.models import ReplyTap, decide_along_chain
from agentledger.activities.packets import build_step_packet, decided
from agentledger.activities.run._base import RunBase
from agentledger.activities.run.answers import AnswerPublisher, heartbeating
from agentledger.domain.context import ContextPacket, InsufficientContext
from agentledger.domain.decisions import Answer
from agentledger.domain.manifest import ExecutionManifest


class ModelStepping(RunBase):
    @activity.defn(name="model_step")
    def model_step(self, params: ModelStepInput) -> ModelStepResult:
        manifest_hash = params.manifest_hash  # the manifest's: it was loaded by this hash
        with _telemetry.span("agentledger.context_build", params.run_id, manifest_hash) as built:
            try:
                manifest = self._manifests(manifest_hash)
                packet = self._build_packet(params, manifest)
            except InsufficientContext as refusal:
                self._append(params.outbox)
                built.set_attribute("agentledger.outcome", "insufficient_context")
                return ModelStepResult(insufficient_context=str(refusal))
            except Exception:
                self._append(params.outbox)  # stored however the build fails, as before
                raise
            _telemetry.packet_built(built, packet)
        self._record_packet(params, packet)
        if manifest.model.provider not in self._models:
            raise ApplicationError(
                f"no model provider {manifest.model.provider!r} on this worker "
                f"(has: {', '.join(sorted(self._models))})",
                type="UnknownModelProvider",
                non_retryable=True,
            )
        return self._ask(params, packet, manifest)

    def _ask(
        self, params: ModelStepInput, packet: ContextPacket, manifest: ExecutionManifest
    ) -> ModelStepResult:
        """The model's decision; an answer is written to the run's answer stream as the model
        speaks (or at once, from a model that does not stream)."""
        attempt = activity.info().attempt
        publisher = AnswerPublisher(
            self._ledger,
            params.run_id,
            params.step,
            params.state.used.steps,
            attempt,
            beat=activity.heartbeat,
        )
        where = (params.run_id, params.manifest_hash)
        with _telemetry.span("agentledger.model_call", *where) as called, heartbeating():
            reply, route = decide_along_chain(
                self._models, packet, manifest.model, ReplyTap(publisher)
            )
            _telemetry.model_called(called, manifest.model, reply)
        result = decided(reply, packet, manifest, route=route, attempt=attempt)
        answer = result.decision
        publisher.finish(answer.answer if isinstance(answer, Answer) else None)
        return result

    def _record_packet(self, params: ModelStepInput, packet: ContextPacket) -> None:
        """The outbox and the packet about to be sent, in one transaction (one commit per
        step), both stored before the model is called. Building the packet reads nothing the
        outbox writes, so it may come first."""
        with erased_is_final(self._ledger), self._ledger.begin() as conn:
            self._ledger.append_in(conn, params.outbox)
            self._ledger.put_packet_in(
                conn, packet.packet_hash, params.run_id, params.step, packet.model_dump(mode="json")
            )
        _telemetry.log_recorded(params.outbox)

    def _build_packet(self, params: ModelStepInput, manifest: ExecutionManifest) -> ContextPacket:
        state = params.state
        assert state.work_order is not None
        pack = self._pack(state.work_order.pack)
        # Retrieved as the run's principal; the builder decides which steps need them.
        principal = state.work_order.principal
        memories = self._memory.context_items(principal, params.now) if self._memory else []
        return build_step_packet(pack, manifest, params.step, state, params.now, memories)
