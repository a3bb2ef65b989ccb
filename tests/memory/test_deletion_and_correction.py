"""Deleted stays deleted and corrected stays corrected, on every read path, on both backends."""

from __future__ import annotations

from agentledger.activities.memory import DeletionReceipt, MemoryStore
from agentledger.packs.support.steps import CHOOSE_NEXT_ACTION, DRAFT_ANSWER
from bench.context_fixtures import CUSTOMER, NOW, build, candidates, state_after
from tests.memory.conftest import proposal, remember, scalar


def memory_contents(store: MemoryStore, **kw: object) -> list[object]:
    return [h.item.content for h in store.retrieve(CUSTOMER, NOW, **kw).hits]  # type: ignore[arg-type]


def packet_memories(store: MemoryStore) -> list[object]:
    items = store.context_items(CUSTOMER, NOW)
    packet = build(DRAFT_ANSWER, state_after(), candidates(state_after(), items))
    return [i.content for i in packet.items_of_kind("memory")]


def test_the_language_preference_enters_the_answer_step_only(store: MemoryStore) -> None:
    remember(store, "mem_lang", "language", "en")
    items = store.context_items(CUSTOMER, NOW)

    choose = build(CHOOSE_NEXT_ACTION, state_after(), candidates(state_after(), items))
    draft = build(DRAFT_ANSWER, state_after(), candidates(state_after(), items))

    profile_id = "profile:acme:usr_73"
    omission = choose.omission_for(profile_id)
    assert omission is not None and omission.reason == "not_required_for_step"
    assert [(i.id, i.content) for i in draft.items_of_kind("memory")] == [
        (profile_id, {"language": "en"})
    ]


def test_a_deleted_memory_stays_deleted_on_every_read_path(store: MemoryStore) -> None:
    remember(store, "mem_lang", "language", "en")
    remember(store, "mem_fmt", "answer_format", "short")
    assert {"language": "en", "answer_format": "short"} in packet_memories(store)  # warm caches
    assert memory_contents(store, query="language english en")

    receipt = store.delete("mem_lang", CUSTOMER, NOW)

    assert isinstance(receipt, DeletionReceipt)
    assert receipt.purged_records == ("mem_lang",) and receipt.index_entries == 1
    assert receipt.cache_entries and receipt.summaries == ("profile:acme:usr_73",)
    assert {"language": "en"} not in memory_contents(store)  # cache refilled without it
    assert memory_contents(store, query="language") == []  # the index
    assert packet_memories(store) == [{"answer_format": "short"}]  # packets and the summary
    assert store.get("mem_lang").content == {}  # type: ignore[union-attr]  # a tombstone
    assert (
        scalar(
            store, "SELECT count(*) FROM memory_cache WHERE CAST(payload AS TEXT) LIKE '%mem_lang%'"
        )
        == 0
    )
    assert (
        scalar(
            store,
            "SELECT count(*) FROM memory_summaries WHERE CAST(payload AS TEXT) LIKE '%\"en\"%'",
        )
        == 0
    )
    assert scalar(store, "SELECT content_text FROM memory_records WHERE memory_id='mem_lang'") == ""
    assert [e.kind for e in store.history("mem_lang")][-2:] == ["deleted", "purged"]


def test_only_the_owner_or_a_curator_may_delete(store: MemoryStore) -> None:
    remember(store, "mem_lang", "language", "en")
    other = CUSTOMER.model_copy(update={"user_id": "usr_88"})

    refused = store.delete("mem_lang", other, NOW)

    assert not isinstance(refused, DeletionReceipt) and refused.code == "deletion_not_allowed"
    assert memory_contents(store) == [{"language": "en"}]


def test_a_corrected_preference_never_returns(store: MemoryStore) -> None:
    remember(store, "mem_lang", "language", "en")
    assert packet_memories(store) == [{"language": "en"}]

    corrected = store.correct("mem_lang", proposal("mem_lang2", {"language": "de"}), CUSTOMER, NOW)

    assert corrected.published
    assert memory_contents(store) == [{"language": "de"}]
    assert memory_contents(store, use_cache=False) == [{"language": "de"}]
    assert memory_contents(store, query="language") == [{"language": "de"}]
    assert packet_memories(store) == [{"language": "de"}]
    old = store.get("mem_lang")
    assert old is not None and (old.state, old.superseded_by) == ("superseded", "mem_lang2")


def test_deleting_a_correction_also_forgets_the_value_it_replaced(store: MemoryStore) -> None:
    remember(store, "mem_lang", "language", "en")
    store.correct("mem_lang", proposal("mem_lang2", {"language": "de"}), CUSTOMER, NOW)

    receipt = store.delete("mem_lang2", CUSTOMER, NOW)

    assert isinstance(receipt, DeletionReceipt)
    assert receipt.purged_records == ("mem_lang2", "mem_lang")
    assert memory_contents(store) == [] and packet_memories(store) == []
