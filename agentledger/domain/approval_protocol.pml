/*
 * The approval and idempotency protocol, as a model spin checks over every interleaving.
 *
 * Mirrors agentledger/domain/approvals.py, domain/assertions.py, workflows/_approvals.py and the
 * support pack's refund (packs/support/tools.py): two runs propose refunds of the SAME order
 * (the cross-run double refund an attack found); two approvers holding trusted keys decide, at
 * once or one after the other; a forger without a trusted key signs anything for anyone and
 * sends again the decisions it read from history; any approval may expire; and the worker may
 * crash at every step: before any workflow task commits (asking for approval, recording a
 * decision, the timer's expiry, authorising the refund, recording its receipt, completing),
 * and inside the refund's activity before or after its transaction commits. A crashed task
 * runs again from what history committed; a crashed update is lost and may be sent again; the
 * activity is retried with the same runtime-issued idempotency key.
 *
 * A decision passes the update's validator on the state it saw, then its handler judges it
 * again when it runs (one update at a time): two approvers validated together cannot both
 * decide.
 *
 * Invariants, checked in every reachable state (ltl below):
 *   - the order is refunded at most once, across runs (money);
 *   - each run's approved proposal takes effect at most once (exactly once when it ends paid);
 *   - no effect without a granted approval bound to that run's own proposal digest;
 *   - a run's receipt says whether its refund was paid, however often it was retried;
 *   - each approval is decided (granted, rejected or expired) at most once, a grant by one of
 *     the approvers;
 *   - nothing a forger sends, signed or replayed, is ever a decision.
 *
 * The event names below are the ledger's kinds (domain/events.py); a test fails when they drift.
 * Variants that must fail (tests/domain/test_protocol_model.py; python -m bench.protocol):
 *   -DNO_ROW_LOCK     the refund without its row lock: the cross-run double refund;
 *   -DNO_IDEMPOTENCY  the refund ignoring its idempotency key: retried after a crash past its
 *                     commit, it answers "nothing left to refund" for the refund it made;
 *   -DNO_RECHECK      the handler trusting its validator: two approvers both decide.
 */

#define RUNS 2
#ifndef MAX_CRASHES
#define MAX_CRASHES 2    /* crashes anywhere, over one whole execution of the model */
#endif
#define SENDS 1          /* decisions each approver sends, and the forger */
#define FORGER 3         /* approvers are 1 and 2 */
#define PAID 1
#define NOT_PAID 2

mtype = {
    approval_requested, approval_granted, approval_rejected, approval_expired,
    approval_attempt_refused, tool_call_authorised, tool_receipt_recorded, run_completed
};

/* The system of record: one order with one refundable unit, and the stored idempotency keys. */
byte refundable = 1;
byte refunds_paid = 0;
byte paid_under[RUNS];
bool key_stored[RUNS];
byte result[RUNS];               /* what the key's transaction stored: PAID or NOT_PAID */
byte receipt_says[RUNS];         /* what the run's receipt recorded */

/* Each run's history, as far as the protocol goes. */
mtype last[RUNS];
byte decisions[RUNS];           /* granted, rejected or expired: at most one */
bool granted[RUNS];
byte granted_digest[RUNS];      /* the proposal digest the grant was bound to */
byte decided_by[RUNS];          /* 1, 2: an approver; FORGER: a forgery got through */
bool spent[RUNS];               /* the accepted decision's token id, kept by the run */
byte crashes = 0;

/* Run r's proposal has digest r + 1: each run proposes its own refund. */
#define DIGEST(r) (r + 1)

/* The worker dies here (a bounded number of times over the whole search). */
#define CRASH (crashes < MAX_CRASHES) -> crashes++

/* A workflow task: it commits ``effect`` or crashes before its commit and runs again. */
#define TASK(effect) do :: CRASH :: atomic { effect; break } od

#ifdef NO_IDEMPOTENCY
#define NO_KEY true
#else
#define NO_KEY false
#endif

/* The refund, inside one database transaction. With the row lock (SELECT ... FOR UPDATE /
 * BEGIN IMMEDIATE), reading what is left and paying is one step; without it, two runs can both
 * read "1 left" before either pays. A key stored before returns its result, with no effect. */
inline refund(r) {
#ifdef NO_ROW_LOCK
    byte seen;
    atomic { if :: key_stored[r] -> seen = 255 :: else -> seen = refundable fi }
    atomic {
        if
        :: seen == 255 -> skip
        :: seen > 0 -> refundable = refundable - (refundable > 0); refunds_paid++;
                       paid_under[r]++; key_stored[r] = true; result[r] = PAID
        :: seen == 0 -> key_stored[r] = true; result[r] = NOT_PAID
        fi
    }
#else
    atomic {
        if
        :: key_stored[r] && !NO_KEY -> skip         /* a retry: the stored result, no effect */
        :: (!key_stored[r] || NO_KEY) && refundable > 0 ->
            refundable--; refunds_paid++; paid_under[r]++; key_stored[r] = true; result[r] = PAID
        :: (!key_stored[r] || NO_KEY) && refundable == 0 ->
            key_stored[r] = true; result[r] = NOT_PAID  /* exceeds_refundable, stored too */
        fi
    }
#endif
}

/* After a grant: authorise the call (a task), attempt the refund until its receipt is recorded
 * (the activity may crash before or after its commit; the task recording the receipt may
 * crash too, and the activity runs again), then complete (a task). */
inline execute(r) {
    TASK(last[r] = tool_call_authorised);
    do
    :: CRASH                                        /* before the transaction */
    :: refund(r);
        if
        :: CRASH                                    /* after its commit: retried */
        :: atomic { last[r] = tool_receipt_recorded; receipt_says[r] = result[r]; break }
        fi
    od
}

proctype Run(byte r) {
    TASK(last[r] = approval_requested);
    if
    :: granted[r] -> execute(r)
    :: last[r] == approval_requested ->             /* the timer fires (its task may crash) */
        TASK(if :: last[r] == approval_requested -> last[r] = approval_expired; decisions[r]++
                :: else -> skip fi)
    :: last[r] == approval_rejected -> skip
    fi;
    if
    :: granted[r] && last[r] != tool_receipt_recorded -> execute(r)   /* granted as it expired */
    :: else -> skip
    fi;
    TASK(last[r] = run_completed)
}

/* The update's handler: one decision judged against the run's history and recorded, atomically
 * (a workflow handles one update at a time), or refused (approval_attempt_refused). A forgery
 * does not verify; a replayed token is spent; the digest must be the pending proposal's. */
inline handle(r, digest, who, trusted, replayed, approve) {
    atomic {
        if
        :: last[r] == approval_requested && trusted && digest == DIGEST(r) && !(replayed && spent[r]) ->
            decisions[r]++; decided_by[r] = who; spent[r] = true;
            if
            :: approve -> granted[r] = true; granted_digest[r] = digest; last[r] = approval_granted
            :: !approve -> last[r] = approval_rejected
            fi
        :: else -> skip                             /* approval_attempt_refused */
        fi
    }
}

/* A decision reaching the run: the validator looks at the state first; the handler runs later.
 * The worker may crash in between: the update is lost and nothing is recorded. */
inline send(r, digest, who, trusted, replayed, approve) {
    if
    :: last[r] == approval_requested ->             /* the validator admits it */
        if
        :: CRASH
#ifdef NO_RECHECK
        :: atomic { decisions[r]++; decided_by[r] = who; spent[r] = true;
                    if :: approve -> granted[r] = true; granted_digest[r] = digest;
                                     last[r] = approval_granted
                       :: !approve -> last[r] = approval_rejected fi }
#else
        :: handle(r, digest, who, trusted, replayed, approve)
#endif
        fi
    :: else -> skip                                 /* refused by the validator, unrecorded */
    fi
}

proctype Approver(byte who) {
    byte r, n = 0;
    bool approve;
    do
    :: n < SENDS ->
        n++;
        select(r : 0 .. RUNS - 1);
        if :: approve = true :: approve = false fi;
        send(r, DIGEST(r), who, true, false, approve)
    :: break
    od
}

/* Signs with its own key for any run and digest, or sends again an accepted decision it read
 * from a run's history (a trusted signature, already spent). */
proctype Forger() {
    byte r, digest, n = 0;
    do
    :: n < SENDS ->
        n++;
        select(r : 0 .. RUNS - 1);
        if
        :: select(digest : 1 .. RUNS); send(r, digest, FORGER, false, false, true)
        :: spent[r] -> send(r, DIGEST(r), FORGER, true, true, granted[r])
        fi
    :: break
    od
}

init {
    atomic {
        run Run(0); run Run(1);
        run Approver(1); run Approver(2); run Forger()
    }
}

#define once_per_order (refunds_paid <= 1)
#define once_per_run (paid_under[0] <= 1 && paid_under[1] <= 1)
#define effect_needs_grant ((paid_under[0] == 0 || (granted[0] && granted_digest[0] == DIGEST(0))) \
                         && (paid_under[1] == 0 || (granted[1] && granted_digest[1] == DIGEST(1))))
#define receipt_true(r) (receipt_says[r] == 0 || ((receipt_says[r] == PAID) == (paid_under[r] > 0)))
#define receipts_true (receipt_true(0) && receipt_true(1))
#define decided_once (decisions[0] <= 1 && decisions[1] <= 1)
#define forger_never_decides (decided_by[0] != FORGER && decided_by[1] != FORGER)

ltl safety {
    [] (once_per_order && once_per_run && effect_needs_grant && receipts_true && decided_once
        && forger_never_decides)
}
