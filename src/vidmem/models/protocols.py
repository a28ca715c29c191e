"""The five model roles every benchmark scores with, and the ``rewriter`` an agent uses.

Conventions shared by all backends:

* Images are ``numpy.ndarray`` of dtype ``uint8``, shape ``(H, W, 3)``, RGB. Sizes may
  differ within a batch; each backend does its own documented preprocessing.
* Boxes are pixel ``(x0, y0, x1, y1)`` floats in the coordinates of the image they
  refer to, x to the right, y down, ``x1 > x0``, ``y1 > y0``.
* Embeddings are ``float32`` arrays of shape ``(N, D)`` with unit L2 norm per row.
* Masks are ``bool`` arrays of shape ``(H, W)`` matching their image.
* Every backend takes ``weights=``, ``device=``, ``dtype=``, ``batch_size=`` keyword
  arguments (classic backends accept and record them too) and describes itself with
  :meth:`info`, which the run log stores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.json_extract import JSON_TYPES

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class BackendInfo:
    """What the run log records about a loaded backend.

    Attributes:
        name: registry name, ``family/variant``.
        weights: local path (or ``None`` for weight-free classic backends).
        weights_sha256: hash over the weight files, ``None`` when there are none.
        official: whether this backend is the one a protocol prescribes; offline
            proxies say ``False`` and every score they produce is labelled.
        settings: anything else that changes the numbers (image size, thresholds...).
    """

    name: str
    weights: str | None = None
    weights_sha256: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    official: bool = False
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "weights": self.weights,
            "weights_sha256": self.weights_sha256,
            "device": self.device,
            "dtype": self.dtype,
            "official": self.official,
            "settings": dict(self.settings),
        }


@dataclass(frozen=True)
class Detection:
    """One detected box in one image."""

    box: Box
    score: float
    label: str


@runtime_checkable
class ImageEmbedder(Protocol):
    def info(self) -> BackendInfo: ...

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Return ``(len(images), D)`` float32, rows L2-normalised."""
        ...


@runtime_checkable
class TextEmbedder(Protocol):
    def info(self) -> BackendInfo: ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Return ``(len(texts), D)`` float32, rows L2-normalised."""
        ...


@runtime_checkable
class Detector(Protocol):
    #: whether ``text_queries`` are understood (OWL-ViT yes, classic/sift no).
    supports_text: bool
    #: whether ``image_query`` (image-guided detection) is understood.
    supports_image_query: bool

    def info(self) -> BackendInfo: ...

    def detect(
        self,
        images: Sequence[np.ndarray],
        *,
        text_queries: Sequence[str] | None = None,
        image_query: np.ndarray | None = None,
        threshold: float | None = None,
    ) -> list[list[Detection]]:
        """Return, per image, the detections sorted by descending score.

        Exactly one of ``text_queries`` / ``image_query`` is given. A backend that does
        not support the given kind raises :class:`vidmem.errors.UserInputError`.
        """
        ...


@runtime_checkable
class Segmenter(Protocol):
    def info(self) -> BackendInfo: ...

    def segment(self, images: Sequence[np.ndarray], boxes: Sequence[Box]) -> list[np.ndarray]:
        """Return one bool ``(H, W)`` mask per ``(image, box)`` pair."""
        ...


@dataclass(frozen=True)
class JudgeRequest:
    """A structured question about images.

    Attributes:
        item_id: what the answer is about, used in every message and log line.
        prompt: the full question; it must ask for a single JSON object.
        images: frames shown to the judge, in order.
        required_keys: top-level keys the answer must contain to count as parsed.
        key_types: the JSON type(s) each named top-level key must hold when present,
            as names from :data:`vidmem.models.json_extract.JSON_TYPES` (``"boolean"``,
            ``"integer"``, ``"number"``, ``"string"``, ``"array"``, ``"object"``,
            ``"null"``) or tuples of them, e.g. ``{"present": "boolean", "count":
            "integer", "why": ("string", "null")}``. A value of another type makes the
            answer unusable (never coerced: ``"true"`` is not ``true``). Stored as
            ``dict[str, tuple[str, ...]]``; an unknown name raises
            :class:`vidmem.errors.UserInputError`.
        payload: the same question as structured data (e.g. the roster as a list of
            dicts). VLM judges read only ``prompt`` and ``images``; judges that are not
            VLMs (such as the sim world's card judge) read ``payload`` instead of
            parsing prose. Never holds ground truth.
        answer_model: a pydantic model class the answer must validate against
            (strictly: nothing is coerced). ``judge/openai`` also sends its JSON schema
            as ``response_format`` so that servers with guided decoding (vLLM, SGLang)
            can only produce a valid object. ``None``: only ``required_keys`` and
            ``key_types`` are checked.
        contract: which versioned prompt template asked the question
            (``"benchmark/prompt@version"``, see :mod:`vidmem.models.prompt_files`);
            recorded with the answer and part of the answer cache's key.
        accept: the question's own check of a parsed answer, run after the schema
            checks: ``accept(data)`` returns why the object cannot be used for THIS
            question (e.g. no item names a roster label), ``""`` when it can. A judge
            treats a refused answer like an unparsable one (one "JSON only" follow-up,
            then ``"unparsable"``); the answer cache stores only answers that pass it
            and checks a stored answer again when reading it. Must be picklable (a
            module-level function or a ``functools.partial`` of one) for worker
            processes; it is part of the question's contract, so a change to its rule
            goes with a new ``contract`` version.
        strict_json: read the reply strictly: the whole reply, whitespace-stripped, must
            be one JSON object (no prose, code fence, second object, single quotes or
            trailing commas; :func:`vidmem.models.json_strict.read_strict_json_object`),
            as a benchmark's official parser does; ``False``: the tolerant extraction of
            :func:`vidmem.models.json_extract.find_json_object`. Set by the question's
            prompt file (``strict_json``); part of the answer cache's key.
        max_tokens: the reply length limit the question asks for (its prompt file's
            ``max_tokens``, e.g. the official scorer's value); ``None``: the judge's own
            default. A judge's explicitly set limit (``judge/openai`` ``max_tokens``,
            a local judge's ``max_new_tokens``) overrides it. Part of the answer
            cache's key.
    """

    item_id: str
    prompt: str
    images: tuple[np.ndarray, ...] = ()
    required_keys: tuple[str, ...] = ()
    payload: dict[str, Any] = field(default_factory=dict)
    key_types: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    answer_model: type | None = None
    contract: str = ""
    accept: Callable[[Mapping[str, Any]], str] | None = None
    strict_json: bool = False
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.strict_json, bool):
            raise UserInputError(
                f"judge item '{self.item_id}': strict_json must be true or false, "
                f"found {self.strict_json!r}")
        tokens = self.max_tokens
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int)
                                   or tokens < 1):
            raise UserInputError(
                f"judge item '{self.item_id}': max_tokens must be an integer >= 1 or None, "
                f"found {tokens!r}", hint="e.g. max_tokens = 256 in the prompt file")
        model = self.answer_model
        if model is not None and not (isinstance(model, type)
                                      and callable(getattr(model, "model_validate", None))):
            raise UserInputError(
                f"judge item '{self.item_id}': answer_model must be a pydantic model class, "
                f"found {model!r}",
                hint="define class Answer(pydantic.BaseModel) and pass answer_model=Answer",
            )
        types: dict[str, tuple[str, ...]] = {}
        for key, allowed in dict(self.key_types or {}).items():
            try:
                names = (allowed,) if isinstance(allowed, str) else tuple(allowed)
            except TypeError:  # e.g. a Python type such as bool
                names = ()
            if not names or any(n not in JSON_TYPES for n in names):
                raise UserInputError(
                    f"judge item '{self.item_id}': key_types[{key!r}] must name JSON types "
                    f"from {', '.join(JSON_TYPES)}; found {allowed!r}",
                    hint='e.g. key_types={"present": "boolean", "why": ("string", "null")}',
                )
            types[str(key)] = names
        object.__setattr__(self, "key_types", types)


@dataclass(frozen=True)
class JudgeResult:
    """A judge's answer. Callers count ``status != "ok"``; it is never an exception.

    Attributes:
        status: ``"ok"`` (``data`` holds the parsed object), ``"unparsable"`` (the
            model answered but no usable JSON could be extracted, even after the
            "JSON only" retry) or ``"error"`` (no answer: server errors or timeouts
            after the bounded retries).
        data: the parsed JSON object when ``status == "ok"``.
        raw: the last raw text received (for the run log and debugging).
        attempts: how many calls were made.
        error: what went wrong, for non-ok results.
        judge: the judge's registry name, so every number says who produced it.
        cached: the answer came from the answer cache (no model call was made now).
    """

    item_id: str
    status: Literal["ok", "unparsable", "error"]
    data: dict[str, Any] | None
    raw: str
    attempts: int
    judge: str
    error: str | None = None
    cached: bool = False


@runtime_checkable
class Judge(Protocol):
    def info(self) -> BackendInfo: ...

    def judge(self, request: JudgeRequest) -> JudgeResult: ...

    def judge_many(self, requests: Sequence[JudgeRequest], *,
                   concurrency: int | None = None) -> list[JudgeResult]: ...


@dataclass(frozen=True)
class RewriteRequest:
    """Ask a text model to rewrite an instruction after a diagnosed failure (M3-Agent).

    Attributes:
        instruction: the instruction that produced the failed clip.
        record: the task record, ``{"actor", "object", "binding", "operation",
            "required_last_frame_evidence"}``.
        failure_mode: what the diagnoser named (``no_action``, ``wrong_binding``, ...).
        evidence: what the diagnoser saw in the last frame, in its words.
        withhold_target: the rewrite must not state the target state (its nouns,
            colours, counts).
        attempt: 1 for the first rewrite of this instruction, 2.. for retries after a
            rejected one.
        rejected: the texts already rejected for this instruction, oldest first.
        prompt: the full question, rendered by the caller from its prompt file; LLM
            rewriters send it, rule-based ones (``rewriter/sim-grammar``) read the
            fields above instead.
        contract: which versioned prompt template wrote ``prompt``
            (``"m3_agent/m3_rewrite@1"``).
    """

    instruction: str
    record: dict[str, Any]
    failure_mode: str
    evidence: str
    withhold_target: bool = False
    attempt: int = 1
    rejected: list[str] = field(default_factory=list)
    prompt: str = ""
    contract: str = ""


@dataclass(frozen=True)
class RewriteResult:
    """A rewriter's answer; failures are a status, never an exception.

    Attributes:
        status: ``"ok"`` (``text`` holds the new instruction) or ``"error"`` (no usable
            answer after the backend's retries; ``error`` says why).
        text: the new instruction, stripped of quotes and Markdown.
        error: what went wrong, for ``status="error"``.
        raw: what the model returned (for the log).
    """

    status: Literal["ok", "error"]
    text: str | None
    error: str | None = None
    raw: Any = None


@runtime_checkable
class Rewriter(Protocol):
    def info(self) -> BackendInfo: ...

    def rewrite(self, request: RewriteRequest) -> RewriteResult: ...
