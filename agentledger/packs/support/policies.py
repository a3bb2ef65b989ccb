"""The pack's policy documents: Markdown files loaded into the versioned document store
(``activities.retrieval``), one passage per ``## Title {#anchor}`` section."""

from __future__ import annotations

from pathlib import Path

POLICY_DIR = Path(__file__).with_name("policies")
