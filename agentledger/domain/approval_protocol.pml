/*
 * The approval and idempotency protocol, as a model spin checks over every interleaving.
 *
 * Mirrors agentledger/domain/approvals.py, domain/assertions.py, workflows/_approvals.py and the
 * support pack's refund (packs/support/tools.py): two runs propose refunds of the SAME order
 * (the cross-run double refund an attack found), two people may decide (an approver holding a
 * trusted key, and a forger without one), any approval may expire, and the worker executing a
 * refund may crash before or after its transaction commits and retry it with the same
 * runtime-issued idempotency key.
 *
 * Invariants, checked in every reachable state (ltl below):
 *   - the order is refunded at most once, across runs (money);
 *   - each run's approved proposal takes effect at most once (exactly once when it ends paid);
 *   - no effect without a granted approval bound to that run's own proposal digest;
 *   - nothing a forger sends is ever granted.
 *
 * The event names below are the ledger's kinds (domain/events.py); a test fails when they drift.
 * Build with -DNO_ROW_LOCK to model the refund without its row lock: spin must then find the
 * double refund (tests/domain/test_protocol_model.py checks that too, so the model can fail).
 */

#define RUNS 2
#define MAX_CRASHES 2

mtype = {
    approval_requested, approval_granted, approval_rejected, approval_expired,
    approval_attempt_refused, tool_call_authorised, tool_receipt_recorded, run_completed
};

/* The system of record: one order with one refundable unit, and the stored idempotency keys. */
byte refundable = 1;
byte refunds_paid = 0;
byte paid_under[RUNS];
bool key_stored[RUNS];

/* Each run's log, as far as the protocol goes. */
mtype last[RUNS];
bool granted[RUNS];
byte granted_digest[RUNS];      /* the proposal digest the grant was bound to */
bool granted_by_forger[RUNS];
byte refused_attempts = 0;
byte crashes = 0;

/* Run r's proposal has digest r + 1: each run proposes its own refund. */
#define DIGEST(r) (r + 1)

/* The refund, inside one database transaction. With the row lock (SELECT ... FOR UPDATE /
 * BEGIN IMMEDIATE), reading what is left and paying is one step; without it, two runs can both
 * read "1 left" before either pays. */
inline refund(r) {
#ifdef NO_ROW_LOCK
    byte seen;
    atomic { if :: key_stored[r] -> seen = 255 :: else -> seen = refundable fi }
    atomic {
        if
        :: seen == 255 -> skip
        :: seen > 0 -> refundable = refundable - (refundable > 0); refunds_paid++;
                       paid_under[r]++; key_stored[r] = true
        :: seen == 0 -> key_stored[r] = true
        fi
    }
#else
    atomic {
        if
        :: key_stored[r] -> skip                    /* a retry: the stored result, no effect */
        :: !key_stored[r] && refundable > 0 ->
            refundable--; refunds_paid++; paid_under[r]++; key_stored[r] = true
        :: !key_stored[r] && refundable == 0 ->
            key_stored[r] = true                    /* exceeds_refundable, stored too */
        fi
    }
#endif
}

/* The tool call after a grant: authorised, then attempted until a receipt is recorded. A crash
 * may strike before the transaction or after its commit; Temporal retries the activity. */
inline execute(r) {
    last[r] = tool_call_authorised;
    do
    :: crashes < MAX_CRASHES -> crashes++           /* crashed before the transaction */
    :: true ->
        refund(r);
        if
        :: crashes < MAX_CRASHES -> crashes++       /* crashed after commit: retried */
        :: true -> break
        fi
    od;
    last[r] = tool_receipt_recorded
}

proctype Run(byte r) {
    last[r] = approval_requested;
    if
    :: granted[r] -> execute(r)
    :: atomic { last[r] == approval_requested -> last[r] = approval_expired }
    :: last[r] == approval_rejected -> skip
    fi;
    last[r] = run_completed
}

/* One decision reaching the update handler: judged and recorded atomically (a workflow handles
 * one update at a time). A forger's assertion does not verify; the approver's names a digest. */
inline decide(r, digest, trusted, approve) {
    atomic {
        if
        :: last[r] == approval_requested && trusted && digest == DIGEST(r) ->
            if
            :: approve -> granted[r] = true; granted_digest[r] = digest;
                          granted_by_forger[r] = !trusted; last[r] = approval_granted
            :: !approve -> last[r] = approval_rejected
            fi
        :: !(last[r] == approval_requested && trusted && digest == DIGEST(r)) ->
            refused_attempts++                      /* approval_attempt_refused */
        fi
    }
}

proctype Person(bool trusted) {
    byte r, digest;
    bool approve;
    do
    :: refused_attempts < 4 ->
        select(r : 0 .. RUNS - 1);
        select(digest : 1 .. RUNS);                 /* any proposal it has seen */
        if :: approve = true :: approve = false fi;
        decide(r, digest, trusted, approve)
    :: break
    od
}

init {
    atomic {
        run Run(0); run Run(1);
        run Person(true); run Person(false)
    }
}

#define once_per_order (refunds_paid <= 1)
#define once_per_run (paid_under[0] <= 1 && paid_under[1] <= 1)
#define effect_needs_grant ((paid_under[0] == 0 || (granted[0] && granted_digest[0] == DIGEST(0))) \
                         && (paid_under[1] == 0 || (granted[1] && granted_digest[1] == DIGEST(1))))
#define forger_never_grants (!granted_by_forger[0] && !granted_by_forger[1])

ltl safety { [] (once_per_order && once_per_run && effect_needs_grant && forger_never_grants) }
