"""Each HPA's last selector validation, reused while its inputs provably stand.

``validateAndParseSelector`` (:func:`hpactl.core.metrics_eval.validate_and_parse_selector`)
is a function of four things: the HPA's key, the scale's selector text, the pods
listed for it and the selector store's entries for those pods
(:meth:`~hpactl.controller.selector_store.SelectorStore.relevant`). A steady sync
has all four unchanged: the same key (the memo is kept per key and dropped with
it), the same text, the same pod objects in the same order (the pod cache hands
out a new object whenever a pod changes) and a namespace whose store version
(:meth:`~hpactl.controller.selector_store.SelectorStore.version`) has not moved.
The memo hands back the validation and the store entries computed from those
inputs only then; anything else is computed again, as before.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from hpactl.core.metrics_eval import SelectorResult
from hpactl.model.pod import PodView
from hpactl.model.selectors import Selector

__all__ = ["REUSE_SELECTOR_VALIDATION", "SelectorMemo"]

# Off: every sync validates its selector (the equivalence tests compare both ways).
REUSE_SELECTOR_VALIDATION = True


@dataclass(frozen=True, slots=True)
class SelectorMemo:
    """One sync's selector validation and the inputs it was computed from."""

    selector_text: str
    pods: tuple[PodView, ...]
    version: int
    hpa_selectors: Mapping[str, Selector]
    result: SelectorResult

    def fits(self, selector_text: str, pods: Sequence[PodView], version: int) -> bool:
        """Whether a sync with these inputs would validate to :attr:`result`."""
        mine = self.pods
        return (
            REUSE_SELECTOR_VALIDATION
            and version == self.version
            and selector_text == self.selector_text
            and len(pods) == len(mine)
            and all(map(operator.is_, pods, mine))
        )
