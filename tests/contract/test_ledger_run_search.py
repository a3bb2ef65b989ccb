"""Listing runs by filter, a keyset page at a time, and the approvals inbox by tenant."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from agentledger.activities.ledger import Ledger, RunFilter
from bench.factories import T0, RunScript, principal, refund_run


def _runs(ledger: Ledger) -> None:
    ledger.append(refund_run("run-wait", finish=False).events)
    ledger.append(refund_run("run-done", start=T0 + timedelta(minutes=1)).events)
    for run_id, tenant, minute in (("run-eu", "acme/eu", 2), ("run-x", "acme_x", 3)):
        script = RunScript(run_id, start=T0 + timedelta(minutes=minute))
        script.started(who=principal("usr_88", tenant_id=tenant))
        ledger.append(script.events)


def ids(ledger: Ledger, where: RunFilter, limit: int = 50) -> list[str]:
    return [r.run_id for r in ledger.search_runs(where, limit)]


def test_runs_are_filtered_by_tenant_status_principal_time_and_approval(ledger: Ledger) -> None:
    _runs(ledger)
    acme = RunFilter(tenant_id="acme")
    # a sub-tenant is inside its tenant; a tenant whose name merely starts alike is not
    assert ids(ledger, acme) == ["run-eu", "run-done", "run-wait"]
    assert ids(ledger, RunFilter(tenant_id="acme_x")) == ["run-x"]
    assert ids(ledger, replace(acme, status="completed")) == ["run-done"]
    assert ids(ledger, replace(acme, waiting_on_approval=True)) == ["run-wait"]
    assert ids(ledger, replace(acme, waiting_on_approval=False)) == ["run-eu", "run-done"]
    assert ids(ledger, replace(acme, principal_id="usr_88")) == ["run-eu"]
    assert ids(ledger, replace(acme, pack="billing")) == []
    later = ledger.get_run("run-done")
    assert later is not None
    assert ids(ledger, replace(acme, updated_from=later.updated_at)) == ["run-eu", "run-done"]
    assert ids(ledger, replace(acme, updated_to=later.updated_at)) == ["run-wait"]


def test_pages_follow_the_keyset_cursor_without_gaps_or_repeats(ledger: Ledger) -> None:
    _runs(ledger)
    seen, where = [], RunFilter()
    while page := ledger.search_runs(where, limit=1):
        seen.append(page[0].run_id)
        where = replace(where, after=(page[0].updated_at, page[0].run_id))
    assert seen == ["run-x", "run-eu", "run-done", "run-wait"]


def test_the_inbox_is_kept_to_a_tenants_runs(ledger: Ledger) -> None:
    _runs(ledger)
    assert [a.run_id for a in ledger.approvals(tenant_id="acme")] == ["run-wait"]
    assert ledger.approvals(tenant_id="acme_x") == []
    assert ledger.approvals(tenant_id="globex") == []
