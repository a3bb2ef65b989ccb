"""The answer shape models were shown before claims named their resource.

Only its JSON schema is used: a manifest frozen before claims were bound
(``ExecutionManifest.bound_claims`` false) keeps showing its model exactly this schema, which is
part of every recorded packet's hash. Parsing always goes through ``decisions.Answer``. The class
is named ``Answer`` and its docstring is the old one on purpose: both are in the schema.
"""

from __future__ import annotations

from typing import Literal

from agentledger.domain._model import Frozen
from agentledger.domain.decisions import ToolCallProposal, _answer_text, _Ids


class Answer(Frozen):
    """A user-facing answer with the source ids it relies on.

    ``claimed_operation_ids`` names completed operations the answer reports as done; the runtime
    rejects an answer that claims an operation without a succeeded receipt. A consequential
    ``proposed_next_action`` is only a proposal: it goes through authorisation and approval.
    """

    type: Literal["answer"] = "answer"
    answer: _answer_text
    supporting_source_ids: _Ids = ()
    claimed_operation_ids: _Ids = ()
    proposed_next_action: ToolCallProposal | None = None
