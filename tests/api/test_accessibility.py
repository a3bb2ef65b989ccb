"""The console passes axe-core (from the npm registry, installed by ``./run.sh test`` into
``infra/axe``) on every page an operator uses, and says everything in words: a status or an
outcome never rests on colour alone (checked with forced colours, which drop the page's own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, expect

from tests._temporal import Harness
from tests.api.test_browser import browser as browser  # the fixtures
from tests.api.test_browser import database_url as database_url
from tests.api.test_browser import pending_refund, signed_in
from tests.api.test_browser import service as service

AXE = Path(__file__).resolve().parents[2] / "infra" / "axe" / "node_modules" / "axe-core"


async def violations(page: Page) -> list[str]:
    """What axe-core finds wrong with the page as it stands, one line per rule."""
    await page.add_script_tag(path=str(AXE / "axe.min.js"))
    found: dict[str, Any] = await page.evaluate("axe.run(document)")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in found["violations"]
    ]


async def test_every_console_page_passes_axe_and_reads_without_colour(
    harness: Harness, service: str, browser: Browser
) -> None:
    run_id = await pending_refund(harness)
    page = await signed_in(browser, service, harness.issuer.token("ops_lead_1"), bypass_csp=True)
    for path in ("/ui/approvals", "/ui/runs", f"/ui/runs/{run_id}"):
        await page.goto(path)
        assert await violations(page) == [], path
    packet = await page.locator("a.packet-link").first.get_attribute("href")
    assert packet is not None
    await page.goto(packet)
    assert await violations(page) == [], packet
    await page.goto("/login")
    assert await violations(page) == [], "/login"
    await page.set_content("<html><body><input></body></html>")  # the check can fail
    assert any(v.startswith("label ") for v in await violations(page))

    await page.emulate_media(forced_colors="active")
    await page.goto("/ui/approvals")
    await expect(page.locator("article.approval h2").first).to_contain_text("[PENDING]")
    await page.goto(f"/ui/runs/{run_id}")
    await expect(page.locator("#run-status")).to_have_text("awaiting_approval")
    await expect(page.locator("#h-operate")).to_have_text("Act on this run")
