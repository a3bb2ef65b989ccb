"""How long each tenant keeps run content after a run ends (``AGENTLEDGER_CONTENT_RETENTION``).

``"90"`` keeps every tenant's content 90 days; ``"acme=90,globex=30"`` names tenants (the
others keep theirs); ``"acme=30,*=365"`` gives the rest a default. After that, housekeeping
shreds the run's content and keeps its log's kinds and digests (``activities.ledger.retention``).
"""

from __future__ import annotations

EVERY_TENANT = "*"


def parse_retention(text: str) -> dict[str, int]:
    """Days per tenant (``*``: every tenant not named); ``ValueError`` naming what is wrong."""
    text = text.strip()
    if not text:
        return {}
    if "=" not in text:
        return {EVERY_TENANT: _days(EVERY_TENANT, text)}
    found: dict[str, int] = {}
    for part in text.split(","):
        tenant, sep, days = (p.strip() for p in part.partition("="))
        if not sep or not tenant:
            raise ValueError(f"{part.strip()!r} is not TENANT=DAYS")
        if tenant in found:
            raise ValueError(f"tenant {tenant!r} is given twice")
        found[tenant] = _days(tenant, days)
    return found


def _days(tenant: str, text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        raise ValueError(f"{tenant}: {text!r} is not a whole number of days") from None
    if days < 1:
        raise ValueError(f"{tenant}: content is kept at least 1 day, not {days}")
    return days
