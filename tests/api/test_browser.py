"""The UI in a real browser (Debian's headless Chromium driven by Playwright) against the real
service on the embedded stack: uvicorn on a loopback port, a Temporal dev server, a worker and
the SQLite ledger, all in this test's event loop.

Screenshots of the inbox, the run inspector and a packet are taken on every run; with
``AGENTLEDGER_UPDATE_SCREENSHOTS=1`` they are written to ``docs/screenshots`` (what the README
shows), otherwise to the test's temporary directory, so a test run leaves the checkout clean.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from playwright.async_api import Browser, Page, Route, async_playwright, expect

from agentledger.domain import events as ev
from agentledger.domain.events import ContextPacketBuilt
from bench._stack import free_port
from tests._temporal import Harness
from tests.api.test_docs_offline import swagger_installed as swagger_installed  # the fixture

CHROMIUM = os.environ.get("AGENTLEDGER_CHROMIUM", "/usr/bin/chromium")
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SHOTS = ("inbox", "inspector", "packet")
REQUEST = "Can I get a refund for order ord_4821? It arrived late."

if not shutil.which(CHROMIUM) and not os.environ.get("CI"):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """SQLite only: the HTTP tier runs on both backends; the browser adds no database path."""
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
async def service(app: FastAPI) -> AsyncIterator[str]:
    """The app on uvicorn, on a free loopback port, in this event loop."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        await launched.close()


async def signed_in(browser: Browser, base: str, token: str, *, bypass_csp: bool = False) -> Page:
    """``bypass_csp``: let a test inject a script (axe-core) past the pages' Content Security
    Policy, which refuses inline script, as it should."""
    page = await (await browser.new_context(base_url=base, bypass_csp=bypass_csp)).new_page()
    await page.goto("/login")
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url("**/ui/approvals")
    return page


async def pending_refund(harness: Harness) -> str:
    run_id = await harness.start(REQUEST)
    await harness.until_approval_or_end(run_id)
    await harness.in_inbox(run_id)
    return run_id


async def test_an_approver_sees_the_pending_refund_approves_it_and_inspects_the_run(
    harness: Harness, service: str, browser: Browser, tmp_path: Path
) -> None:
    """Signed in with tokens of the stack's own issuer, as `agentledger token issue` prints."""
    run_id = await pending_refund(harness)
    update = os.environ.get("AGENTLEDGER_UPDATE_SCREENSHOTS") == "1"
    shots = DOCS_SCREENSHOTS if update else tmp_path
    shots.mkdir(parents=True, exist_ok=True)

    outsider = await signed_in(browser, service, harness.issuer.token("ops_globex"))
    await expect(outsider.locator("#empty")).to_have_text("No pending approvals for you.")
    assert run_id not in await outsider.content()

    requester = await signed_in(browser, service, harness.issuer.token("usr_73"))
    await requester.get_by_role("button", name="Approve", exact=True).click()
    await expect(requester.get_by_role("alert")).to_contain_text(
        "usr_73 requested this action and cannot approve it"
    )

    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"))
    card = page.locator("article.approval", has_text=run_id)
    await expect(card).to_contain_text("create_refund")
    await expect(card).to_contain_text("ord_4821")
    await expect(card.locator("time")).to_contain_text("in ")  # the countdown ticks
    await expect(card.locator("ol.conversation")).to_contain_text(
        f"usr_73 (request, #1): “{REQUEST}”"
    )
    await expect(card.locator("table.change")).to_contain_text("refundable_amount")
    await expect(card.locator("ul.bounds")).to_contain_text(
        "amount 42.5 at most refundable_amount 42.5"
    )
    await card.locator("summary").click()
    await expect(card).to_contain_text("[verified fact]")
    await page.screenshot(path=shots / "inbox.png", full_page=True)

    await card.get_by_label("Reason", exact=True).fill("delivered late, policy applies")
    await page.keyboard.press("Tab")  # keyboard only: the reason field, then Approve
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"**/ui/runs/{run_id}*")
    await expect(page.locator("#run-status")).to_have_text("completed", timeout=30_000)
    await expect(page.locator("#h-approvals + ul")).to_contain_text("granted")
    await expect(page.locator("#h-approvals + ul")).to_contain_text("requester_cannot_approve")
    await expect(page.locator("#h-approvals + ul")).to_contain_text("the call ran (“Refund rf_")
    await expect(page.locator("li.verified")).to_contain_text(
        f"verified signature of {harness.issuer.name}"
    )
    await page.screenshot(path=shots / "inspector.png")

    await page.get_by_role("button", name="Show the difference").click()
    await expect(page.get_by_role("heading", level=1)).to_contain_text("From packet")
    await expect(page.locator("table")).to_contain_text("→")
    await page.go_back()

    omitted = next(
        e
        for e in harness.runtime.ledger.read(run_id)
        if isinstance(e, ContextPacketBuilt) and e.omission_count
    )
    await page.locator(f"a[href$='{omitted.packet_hash}']").click()
    omissions = page.locator("#omissions li")
    await expect(omissions.first).to_contain_text("reason")
    assert await omissions.count() == omitted.omission_count
    await page.screenshot(path=shots / "packet.png")
    assert all((shots / f"{name}.png").stat().st_size > 10_000 for name in SHOTS)


async def test_an_approver_approves_a_smaller_refund_from_the_card_and_sees_the_diff(
    harness: Harness, service: str, browser: Browser
) -> None:
    """Keyboard only: the amount field, then Tab to the approve-with-changes button."""
    run_id = await pending_refund(harness)
    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"))
    card = page.locator("article.approval", has_text=run_id)
    amount = card.get_by_label("amount (as approved)", exact=True)
    await expect(amount).to_have_value("42.5")
    await amount.fill("50.0")  # asks for more: refused, nothing applied
    await card.get_by_role("button", name="Approve with these changes").click()
    await expect(page.get_by_role("alert")).to_contain_text("asks for more than was proposed")
    card = page.locator("article.approval", has_text=run_id)
    await card.get_by_label("amount (as approved)", exact=True).fill("20.0")
    await card.get_by_role("button", name="Approve with these changes").focus()
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"**/ui/runs/{run_id}*")
    await expect(page.locator("#run-status")).to_have_text("completed", timeout=30_000)
    diff = page.locator("table.edit-diff")
    await expect(diff.locator("tbody tr")).to_have_count(1)
    await expect(diff.locator("tbody tr")).to_contain_text("amount")
    await expect(diff.locator("del")).to_have_text("42.5")
    await expect(diff.locator("ins")).to_have_text("20.0")
    await expect(page.locator("#h-approvals + ul")).to_contain_text("the call ran (“Refund rf_")


async def test_an_approver_rejects_two_checked_approvals_at_once_and_reads_each_result(
    harness: Harness, service: str, browser: Browser
) -> None:
    runs = [await pending_refund(harness) for _ in range(2)]
    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"))
    for run_id in runs:
        card = page.locator("article.approval", has_text=run_id)
        await card.get_by_role("checkbox").check()
    await page.get_by_label("Reason for the selected").fill("duplicate tickets")
    await page.get_by_role("button", name="Reject selected").click()
    results = page.locator("#batch-results li")
    await expect(results).to_have_count(2)
    for run_id in runs:
        await expect(results.filter(has_text=run_id)).to_contain_text("[DONE]")
        await expect(results.filter(has_text=run_id)).to_contain_text("rejected by ops_lead_1")
    for run_id in runs:
        await harness.finish(run_id)
        row = harness.runtime.ledger.get_run(run_id)
        assert row is not None and row.status == "completed"


async def test_a_customer_starts_a_run_and_an_operator_finds_steers_and_cancels_it(
    harness: Harness, service: str, browser: Browser
) -> None:
    customer = await signed_in(browser, service, harness.issuer.token("usr_73"))
    await customer.goto("/ui/runs")
    await customer.get_by_label("Pack to run").select_option("support")
    await customer.get_by_label("Your request").fill(REQUEST)
    await customer.get_by_role("button", name="Start the run").click()
    await customer.wait_for_url("**/ui/runs/run_*")
    run_id = customer.url.split("/ui/runs/")[1].split("?")[0]
    await harness.until_approval_or_end(run_id)
    await harness.in_inbox(run_id)

    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"))
    await page.goto("/ui/runs")
    await page.get_by_label("Request contains").fill("ord_4821 late")
    await page.get_by_label("Requester").fill("usr_73")
    await page.get_by_role("button", name="Search").click()
    await expect(page.locator("#runs tbody tr")).to_have_count(1)
    await page.get_by_role("link", name=run_id).click()
    await expect(page.locator("#usage")).to_contain_text("tokens")

    await page.get_by_label("Tell the run").fill("The customer called back: keep it short.")
    await page.get_by_role("button", name="Send the instruction").click()
    await expect(page.locator("p.notice")).to_contain_text("instructed")
    await expect(page.locator("#timeline")).to_contain_text("operator_instructed")

    await page.get_by_label("Reason for cancelling").fill("the customer withdrew the request")
    await page.get_by_label("Yes, cancel").focus()  # keyboard only: tick, then submit
    await page.keyboard.press("Space")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await expect(page.locator("#run-status")).to_have_text("cancelled", timeout=30_000)
    await expect(page.locator("#h-operate")).to_have_count(0)  # an ended run takes no action
    events = await harness.finish(run_id)
    assert isinstance(events[-1], ev.RunCancelled) and events[-1].cancelled_by == "ops_lead_1"


async def test_an_operator_forks_a_parked_run_dry_from_its_page_by_keyboard(
    harness: Harness, service: str, browser: Browser
) -> None:
    run_id = await harness.start(REQUEST)
    await harness.in_inbox(run_id)
    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"))
    await page.goto(f"/ui/runs/{run_id}")
    at = await page.get_by_label("Start a new run from this run's state").input_value()
    await expect(page.get_by_label("Dry: refuse every write")).to_be_checked()
    await page.get_by_label("Yes, start the fork").focus()  # keyboard only: tick, then submit
    await page.keyboard.press("Space")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await page.wait_for_url("**/ui/runs/*-fork-*")
    await expect(page.locator("#forked-from")).to_contain_text(f"from {run_id} at #{at} (dry")
    fork_id = page.url.split("/ui/runs/")[1].split("?")[0]
    events = await harness.finish(fork_id)
    forked = events[1]
    assert isinstance(forked, ev.RunForked) and forked.forked_by == "ops_lead_1"
    assert [e.reason_code for e in events if isinstance(e, ev.ToolCallDenied)] == ["fork_dry"]
    await page.reload()
    await expect(page.locator("#timeline")).to_contain_text("tool_call_denied")


async def test_a_run_page_shows_the_answer_while_it_is_written_and_starts_over_on_a_retry(
    harness: Harness, service: str, browser: Browser
) -> None:
    """The page's stream as a model step writes it (here written into the ledger's answer
    stream directly, as the step's publisher does, while the run waits on its approval)."""
    run_id = await harness.start(REQUEST)
    await harness.in_inbox(run_id)
    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"))
    await page.goto(f"/ui/runs/{run_id}")
    live = page.locator("#answer-live")
    await expect(page.locator("#answer-live-line")).to_be_hidden()
    ledger = harness.runtime.ledger
    first = ledger.open_stream(run_id, "draft_answer", 9, 1)
    ledger.append_chunk(run_id, first, 0, "Your refund ")
    await expect(live).to_have_text("Your refund ")
    ledger.append_chunk(run_id, first, 12, "is being")
    await expect(live).to_have_text("Your refund is being")
    retried = ledger.open_stream(run_id, "draft_answer", 9, 2)  # the worker died: attempt 2
    ledger.append_chunk(run_id, retried, 0, "A refund")
    await expect(live).to_have_text("A refund")
    await expect(page.locator("#live")).to_contain_text("starts over (retried)")


async def test_the_api_docs_render_offline_under_the_pages_policy(
    swagger_installed: None, service: str, browser: Browser
) -> None:
    """Every request the page makes is to the service (any other is aborted, as offline), and
    the content security policy blocks nothing Swagger UI needs."""
    page = await (await browser.new_context(base_url=service)).new_page()
    elsewhere: list[str] = []
    blocked: list[str] = []

    async def only_the_service(route: Route) -> None:
        if route.request.url.startswith(service):
            await route.continue_()
        else:
            elsewhere.append(route.request.url)
            await route.abort()

    await page.route("**/*", only_the_service)
    page.on("console", lambda m: blocked.append(m.text) if "Content Security" in m.text else None)
    await page.goto("/docs")
    await expect(page.get_by_role("heading", level=1)).to_contain_text("agentledger 1 OAS 3.1")
    await expect(page.locator("#swagger-ui")).to_contain_text("/api/runs/{run_id}/approvals")
    assert elsewhere == [] and blocked == []
