"""Every ``workflow.patched`` id, in one list: what it changed, the recorded histories
(``tests/replay/histories/``) that carry its marker and so replay its new branch, and when it
may be deprecated. Workflows name a patch by its constant here, never by a string literal
(``tests/replay/test_patches.py`` holds both the list and the histories named).

A patch id's lifecycle (samples-python ``patching/``): ``patched(id)`` keeps runs recorded
before the change replaying as they ran; ``deprecate_patch(id)`` replaces it once no such run
can replay any more; the call goes once no open run carries the marker. The first step, for
every id, needs: no run recorded without the marker still open or inside retention on any
deployment (``agentledger check-replay --all`` against each server finds none), and the
histories in ``tests/replay/histories/`` recorded without it retired with a note. The
``deprecate_when`` of each entry adds what is particular to it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    id: str
    change: str
    covered_by: tuple[str, ...]  # recorded histories carrying its marker; () means none yet
    deprecate_when: str


BUDGET_CEILING = "budget-ceiling"
BOUNDED_WINDOW = "bounded-window"
CHECKED_CONTINUATION = "checked-continuation"
DEPLOYMENT_QUEUES = "deployment-queues"
FLUSH_AS_ACTIVITY = "flush-as-activity"
APPEND_IN_ORDER = "append-in-order"
HANDOFFS = "handoffs"
MEMORY_PROPOSAL = "memory-proposal-v1"
WORK_ORDER_LIMITS = "work-order-limits"
RUN_ID_IS_WORKFLOW_ID = "run-id-is-workflow-id"
DIRECTORY_APPROVERS = "approvers-from-directory"
SINGLE_USE_ASSERTIONS = "assertions-single-use"
ISSUERS_BOUND_TO_TENANTS = "issuers-bound-to-tenants"
BOUNDS_WITH_DEFAULTS = "bounds-with-defaults"
UNGUESSABLE_CHILD_IDS = "unguessable-child-ids"
SIGNED_REQUESTER = "signed-requester"
PLANNED_GRANTS = "planned-grants"
PRUNE_ENDED_RUNS = "prune-ended-runs"

_OLD_RUNS = "no run recorded before it is open or in retention"

PATCHES: tuple[Patch, ...] = (
    Patch(
        FLUSH_AS_ACTIVITY,
        "events are appended by a regular activity, not a local one (a crashed task re-emitted "
        "them with a new clock and the ledger refused the different payload)",
        ("refund_approved_v2.json", "loop_continue_as_new_0.json", "refund_approved_v11.json"),
        f"{_OLD_RUNS}; refund_approved.json and refund_rejected.json retired",
    ),
    Patch(
        MEMORY_PROPOSAL,
        "a completed run's outcome with its receipt is proposed to memory (quarantine first)",
        ("refund_approved_v3.json", "refund_approved_v11.json", "handoff_v1.json"),
        f"{_OLD_RUNS}; refund_approved.json and _v2 retired",
    ),
    Patch(
        BUDGET_CEILING,
        "the frozen profile's budgets are the ceiling; a work order may only narrow them",
        ("refund_approved_v5.json", "refund_rejected_v5.json", "conversation_v10.json"),
        f"{_OLD_RUNS}; refund histories before _v5 retired",
    ),
    Patch(
        WORK_ORDER_LIMITS,
        "an oversized or malformed work order is refused before any activity, recorded small",
        ("refund_approved_v5.json", "conversation_v7.json", "refund_approved_v11.json"),
        f"{_OLD_RUNS}; refund histories before _v5 retired",
    ),
    Patch(
        DIRECTORY_APPROVERS,
        "who may approve is the directory's answer, not the decision's own principal",
        ("refund_approved_v5.json", "refund_rejected_v9.json", "handoff_v1.json"),
        f"{_OLD_RUNS}; refund histories before _v5 retired",
    ),
    Patch(
        CHECKED_CONTINUATION,
        "state carried across continue-as-new is taken only once the ledger vouches for it",
        ("loop_continue_as_new_v9_1.json", "loop_continue_as_new_v10_3.json"),
        f"{_OLD_RUNS}; loop_continue_as_new_1..3.json retired",
    ),
    Patch(
        DEPLOYMENT_QUEUES,
        "a run's task queues come from the worker's deployment (a local activity), not input",
        ("refund_approved_v9.json", "conversation_v9.json", "loop_continue_as_new_v10_0.json"),
        f"{_OLD_RUNS}; refund histories before _v9, conversation_v7/_v8 and "
        "loop_continue_as_new_0..3 retired",
    ),
    Patch(
        BOUNDED_WINDOW,
        "compaction keeps a bounded window of items, so a long run's state stays one size",
        ("loop_continue_as_new_v10_0.json", "loop_continue_as_new_v10_2.json"),
        f"{_OLD_RUNS}; loop_continue_as_new_0..3 and _v9_* retired",
    ),
    Patch(
        SINGLE_USE_ASSERTIONS,
        "an approval or reply assertion is single-use, a reply bound to its question",
        ("refund_approved_v10.json", "conversation_v10.json"),
        f"{_OLD_RUNS}; refund histories before _v10 and conversation_v7..v9 retired",
    ),
    Patch(
        ISSUERS_BOUND_TO_TENANTS,
        "a reply signed by an external issuer is checked against the directory's tenants",
        ("conversation_v10.json",),
        f"{_OLD_RUNS}; conversation_v7..v9 retired",
    ),
    Patch(
        HANDOFFS,
        "a run may delegate to a child run; a running run's pending approvals expire with it",
        ("handoff_v1.json",),
        f"{_OLD_RUNS}; every history without the marker (all but handoff_v1) re-recorded",
    ),
    Patch(
        APPEND_IN_ORDER,
        "every append carries the events not yet confirmed stored, in order",
        ("refund_approved_sdk_v1.json", "refund_rejected_sdk_v1.json"),
        _OLD_RUNS,
    ),
    Patch(
        RUN_ID_IS_WORKFLOW_ID,
        "a new run whose input names another run id than its workflow id is refused",
        (),
        "a history carrying its marker is recorded (its branch runs only for a forged input)",
    ),
    Patch(
        BOUNDS_WITH_DEFAULTS,
        "a work order's bounds compare a call with its schema's defaults filled",
        ("refund_approved_sdk_v1.json", "refund_rejected_sdk_v1.json"),
        _OLD_RUNS,
    ),
    Patch(
        UNGUESSABLE_CHILD_IDS,
        "a child run's id ends in a random suffix from the parent's deterministic randomness",
        (),
        "a handoff history carrying its marker is recorded; handoff_v1.json retired",
    ),
    Patch(
        SIGNED_REQUESTER,
        "a new run starts only with its requester's signed assertion for its work order",
        ("refund_approved_v12.json",),
        _OLD_RUNS,
    ),
    Patch(
        PLANNED_GRANTS,
        "a run's grants are those the worker planned, narrowed by the work order's own",
        ("refund_approved_v12.json",),
        _OLD_RUNS,
    ),
    Patch(
        PRUNE_ENDED_RUNS,
        "housekeeping also drops what runs ended longer ago than kept left beside their logs "
        "(answer streams, fork sandboxes)",
        ("housekeeping_v1.json",),
        "no Housekeeping firing recorded before it is open or in retention (firings last "
        "seconds, so one retention period after the change)",
    ),
)

PATCHES_BY_ID = {patch.id: patch for patch in PATCHES}
