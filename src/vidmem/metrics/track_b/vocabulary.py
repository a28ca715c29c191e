"""Track-B vocabularies: entity kinds, roster roles, cast ops, forbidden reasons, families.

Part of :mod:`vidmem.metrics.track_b` (the overview is there).
"""

from __future__ import annotations

from typing import Literal

#: the judge's third answer: neither present nor absent
ABSTAIN = "abstain"
KINDS = ("character", "prop", "location")
#: the kinds whose appearances Recall and Precision pool (locations are near-free)
RECALL_KINDS = ("character", "prop")
#: an entry's role in its segment's roster
ROLES = ("required", "forbidden", "false_friend_target", "decoy", "location")
#: the roles of the segment's cast (the gold ``cast[]`` entries)
CAST_ROLES = ("required", "location")
OPS = ("introduce", "recall", "recall_after_gap", "transform", "persist")
FORBIDDEN_REASONS = ("destroyed", "deceased", "lookalike_absent")
#: gap (segments) from which a return is a long-gap return
LONG_GAP = 30
#: the nine stress families of :func:`family_rates`, in the paper's order
FAMILIES = ("long_gap_return", "temporal_reference", "state_change", "persistent_state",
            "count", "lookalike", "false_friend", "deprecation", "reference_indirect")
#: the rates of the paired story bootstrap, in the order of :func:`story_counts` rows
BOOTSTRAP_RATES = ("recall", "precision", "avoid_ok")
#: the judge's state answer when the clip shows the state the roster line describes
STATE_SHOWN = "changed"

Present = bool | Literal["abstain"]
