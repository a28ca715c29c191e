"""The M3-Agent's answer shapes: the failure modes a diagnoser names, and their schemas.

Rules:

* :data:`FAILURE_MODES` is the closed list of what a diagnosis may say about the last
  frame of a clip (seed 001 section 5: no action, wrong binding, missing departure,
  return to an intact object, occluded view) plus ``success``; anything else makes the
  answer unusable (the answer model is a ``Literal``, validated strictly).
* A diagnosis is ``{"failure_mode", "evidence"}``; ``evidence`` says what the frame
  shows, in the diagnoser's words, and is handed to the rewriter.
* A rewriter answers plain text (the new instruction); :class:`RewriteText` is the
  shape the agent records it in, and the answer model its prompt file names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["FAILURE_MEANINGS", "FAILURE_MODES", "DiagnosisAnswer", "RewriteText"]

#: what a diagnosis of a last frame may say, ``success`` last
FAILURE_MODES = ("no_action", "wrong_binding", "missing_departure", "return_to_intact",
                 "occluded_view", "success")

#: each failure mode as the diagnosis prompt explains it to the judge
FAILURE_MEANINGS = {
    "no_action": "the requested operation was not carried out (e.g. the container is "
                 "still closed, nothing was moved)",
    "wrong_binding": "the operation happened, but the wrong object or place is bound (e.g. "
                     "the container opens onto another object, the object is in the wrong "
                     "place)",
    "missing_departure": "the required departure (leaving, looking away, the camera moving "
                         "off) did not happen before the return",
    "return_to_intact": "the view returns to the object, but it is still in its earlier, "
                        "unchanged state",
    "occluded_view": "the operation may have happened, but the required evidence is hidden "
                     "(blocked, out of frame, too dark or too small to read)",
    "success": "the last frame clearly shows the required evidence",
}


class DiagnosisAnswer(BaseModel):
    """A diagnoser's answer about one last frame."""

    failure_mode: Literal[FAILURE_MODES]  # type: ignore[valid-type]
    evidence: str = Field(description="what the last frame shows, in a short sentence")


class RewriteText(BaseModel):
    """A rewriter's answer: the new instruction (sent as plain text, not JSON)."""

    text: str = Field(min_length=1)
