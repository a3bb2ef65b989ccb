"""The pack's policy documents: Markdown split into passages with stable anchors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from domain.canonical import sha256_hex

POLICY_DIR = Path(__file__).with_name("policies")
_HEADING = re.compile(r"^## (?P<title>.+?) \{#(?P<anchor>[a-z0-9-]+)\}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Passage:
    source_id: str
    document_id: str
    revision: str
    title: str
    text: str

    @property
    def content_hash(self) -> str:
        return sha256_hex(self.text)


def split_passages(document_id: str, revision: str, markdown: str) -> list[Passage]:
    """One passage per ``## Title {#anchor}`` section; the anchor makes the id stable."""
    matches = list(_HEADING.finditer(markdown))
    passages = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(markdown)
        text = " ".join(markdown[match.end() : end].split())
        passages.append(
            Passage(
                source_id=f"{document_id}#{match['anchor']}",
                document_id=document_id,
                revision=revision,
                title=match["title"],
                text=text,
            )
        )
    return passages


def shipped_passages() -> list[Passage]:
    """The returns and shipping policies the support pack ships (revision v1 of each)."""
    return [
        passage
        for path in sorted(POLICY_DIR.glob("*.md"))
        for passage in split_passages(path.stem, "v1", path.read_text(encoding="utf-8"))
    ]
