"""Model prompts as data: one versioned template file per question a benchmark or agent asks.

A benchmark keeps its judge prompts in ``prompts/<name>.toml`` inside its folder (an
agent in ``agents/prompts/``, e.g. the M3-Agent's diagnosis and rewrite prompts)::

    benchmark = "vmem_track_b"
    name = "segment_presence"
    version = 1             # bump on ANY change of wording or answer schema
    language = "en"
    answer = "vidmem.benchmarks.vmem_track_b.answers:SegmentAnswer"   # pydantic model
    strict_json = false     # optional: true = the whole reply must be one JSON object
    max_tokens = 1536       # optional: the reply length limit the question asks for
    template = '''
    You are shown {{ n_frames }} frames of one video segment. ...
    Reply with one JSON object that follows this JSON schema:
    {{ answer_schema }}
    '''

The ``benchmark`` field names who asks (a benchmark, or an agent such as ``m3_agent``).
Two optional fields say how the answer is obtained and read, where the benchmark's
official scorer fixes it: ``strict_json`` (default ``false``) -- ``true`` when the official
parser is ``json.loads`` of the whole reply, so a reply with prose, a code fence or a
second object is unparsable (:mod:`vidmem.models.json_strict`); ``false`` keeps the
tolerant extraction (:mod:`vidmem.models.json_extract`) -- and ``max_tokens`` (default:
the judge's own limit), the reply length limit the official scorer sends. Both reach
every :class:`~vidmem.models.protocols.JudgeRequest` the file makes, and run.json.
The loader lives here, on the models floor, because agents sit below benchmarks and
load their prompts with it too; :mod:`vidmem.benchmarks.prompts` re-exports it.

The template is Jinja2 with undefined names refused (a misspelt variable is an error,
not an empty string); ``answer_schema`` is the answer model's JSON schema, filled in by
:meth:`PromptTemplate.render`. The contract ``"<benchmark>/<name>@<version>"`` goes
into every :class:`~vidmem.models.protocols.JudgeRequest` (so into the answer cache's
key) and, with the file's SHA-256, into run.json's protocol block via
:meth:`PromptTemplate.describe`: a number produced under one wording is never mixed
with one produced under another.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib
import importlib.resources
import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError
from vidmem.models.protocols import JudgeRequest

__all__ = ["PromptTemplate", "answer_schema", "load_prompt"]

_FIELDS = {"benchmark": str, "name": str, "version": int, "language": str, "answer": str,
           "template": str}
#: optional fields and their types (defaults: tolerant reading, the judge's own limit)
_OPTIONAL = {"strict_json": bool, "max_tokens": int}


@functools.lru_cache(maxsize=8192)
def answer_schema(model: type) -> dict[str, Any]:
    """The JSON schema of the pydantic answer model ``model``, built once per class.

    Every judge question needs it three times (its prompt, its answer-cache key, the
    request body's ``response_format``), and pydantic rebuilds it on each call
    (0.2-0.7 ms); answer models are classes made once (narrowed ones are themselves
    cached by roster), so the schema is kept per class. The returned dict is shared:
    read it, never change it.

    Example:
        >>> answer_schema(_Present) is answer_schema(_Present)
        True
        >>> answer_schema(_Present)["required"]
        ['present']
    """
    return model.model_json_schema()  # type: ignore[attr-defined,no-any-return]


@functools.lru_cache(maxsize=8192)
def _schema_text(model: type) -> str:
    return json.dumps(answer_schema(model), indent=2)


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> Any:
    """The Jinja2 template of a prompt file's source, compiled once per source text
    (compiling is ~30x the cost of rendering; prompts are rendered once per question)."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                             autoescape=False)
    return env.from_string(template)


@dataclass(frozen=True)
class PromptTemplate:
    """One judge prompt file, loaded and checked.

    Attributes:
        benchmark, name, version, language: from the file.
        template: the Jinja2 source.
        answer_model: the pydantic model class the answer must validate against.
        path: where the file was read from.
        sha256: hash of the file's bytes.
        strict_json: the reply must be exactly one JSON object (the official parser's
            rule); ``False``: the object is dug out of free text.
        max_tokens: the reply length limit the question asks for; ``None``: the judge's.
    """

    benchmark: str
    name: str
    version: int
    language: str
    template: str
    answer_model: type
    path: Path
    sha256: str
    strict_json: bool = False
    max_tokens: int | None = None

    @property
    def contract(self) -> str:
        """``"<benchmark>/<name>@<version>"``."""
        return f"{self.benchmark}/{self.name}@{self.version}"

    @property
    def answer_schema(self) -> dict[str, Any]:
        """The file's answer model's JSON schema (the caller's own copy)."""
        return copy.deepcopy(answer_schema(self.answer_model))

    def render(self, answer_model: type | None = None, **values: Any) -> str:
        """The prompt text for ``values`` (plus ``answer_schema``: that of ``answer_model``,
        default the file's), stripped."""
        import jinja2

        try:
            text = _compiled(self.template).render(
                answer_schema=_schema_text(answer_model or self.answer_model), **values)
        except jinja2.TemplateError as exc:
            raise UserInputError(
                f"judge prompt {self.path}: cannot render it ({exc})",
                hint=f"pass every variable the template uses; given: {sorted(values)}",
            ) from None
        return text.strip()

    def request(self, item_id: str, images: Sequence[np.ndarray] = (), *,
                answer_model: type | None = None, **values: Any) -> JudgeRequest:
        """A judge request asking this prompt about ``images``; the answer must hold
        the answer model's required fields and validate against it.

        ``answer_model`` narrows the file's model for this one question (e.g. entity ids
        restricted to a segment's roster); it must be a subclass of the file's model.
        """
        model = answer_model or self.answer_model
        if not (isinstance(model, type) and issubclass(model, self.answer_model)):
            raise UserInputError(
                f"judge prompt {self.path}: answer_model {model!r} is not a subclass of the "
                f"file's answer model {self.answer_model.__name__}")
        required = tuple(name for name, f in model.model_fields.items()  # type: ignore[attr-defined]
                         if f.is_required())
        return JudgeRequest(item_id=item_id, prompt=self.render(model, **values),
                            images=tuple(images), required_keys=required, answer_model=model,
                            contract=self.contract, strict_json=self.strict_json,
                            max_tokens=self.max_tokens)

    def describe(self) -> dict[str, Any]:
        """What run.json's protocol block records about this prompt: its contract, hash,
        answer schema, how a reply is read (``reply``) and the reply length limit it asks
        for (``max_tokens``, ``None``: the judge's own)."""
        return {"contract": self.contract, "language": self.language, "sha256": self.sha256,
                "answer_schema": self.answer_schema,
                "reply": ("strict: the whole reply, whitespace-stripped, must be one JSON "
                          "object" if self.strict_json else
                          "tolerant: the first JSON object found in the reply"),
                "max_tokens": self.max_tokens}


def _source(where: str | Path, name: str) -> tuple[Path, bytes]:
    if isinstance(where, Path):
        path = where / "prompts" / f"{name}.toml"
        if not path.is_file():
            raise UserInputError(f"judge prompt '{name}': expected {path}, found no such file")
        return path, path.read_bytes()
    resource = importlib.resources.files(where) / "prompts" / f"{name}.toml"
    if not resource.is_file():
        raise UserInputError(
            f"judge prompt '{name}': expected prompts/{name}.toml in package {where}, found none",
            hint="add the file and list its prompts/*.toml in the package data (pyproject.toml)")
    return Path(str(resource)), resource.read_bytes()


def _answer_model(path: Path, target: str) -> type:
    module, _, attr = target.partition(":")
    try:
        model = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UserInputError(
            f"judge prompt {path}: answer = {target!r} cannot be imported ({exc})",
            hint="give the answer model as 'package.module:ClassName'") from None
    if not (isinstance(model, type) and hasattr(model, "model_json_schema")):
        raise UserInputError(f"judge prompt {path}: answer = {target!r} is not a pydantic model")
    return model


def load_prompt(where: str | Path, name: str) -> PromptTemplate:
    """Load ``prompts/<name>.toml`` from a package (``"vidmem.benchmarks.mist"``,
    ``"vidmem.agents"``) or folder (a :class:`~pathlib.Path`).

    Raises:
        UserInputError: the file is missing, not TOML, lacks a field or holds a bad one.

    Example:
        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp()); (d / "prompts").mkdir()
        >>> _ = (d / "prompts" / "present.toml").write_text('''
        ... benchmark = "demo"
        ... name = "present"
        ... version = 2
        ... language = "en"
        ... answer = "vidmem.models.prompt_files:_Present"
        ... template = "Is {{ who }} in the image? Answer as JSON: {{ answer_schema }}"
        ... ''')
        >>> p = load_prompt(d, "present")
        >>> p.contract, p.request("clip-1", who="the cat").required_keys
        ('demo/present@2', ('present',))
        >>> p.render(who="the cat")[:27]
        'Is the cat in the image? An'
    """
    path, data = _source(where, name)
    try:
        fields = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserInputError(f"judge prompt {path}: not valid TOML ({exc})") from None
    for key, kind in _FIELDS.items():
        value = fields.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) or value in ("", None):
            raise UserInputError(
                f"judge prompt {path}: field '{key}' must be a non-empty {kind.__name__}, "
                f"found {value!r}", hint=f"fields: {', '.join(_FIELDS)}")
    unknown = sorted(set(fields) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise UserInputError(f"judge prompt {path}: unknown fields {unknown}",
                             hint=f"fields: {', '.join([*_FIELDS, *_OPTIONAL])}")
    for key, kind in _OPTIONAL.items():
        value = fields.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value < 1)):
            raise UserInputError(
                f"judge prompt {path}: optional field '{key}' must be "
                f"{'true or false' if kind is bool else 'an integer >= 1'}, found {value!r}",
                hint="strict_json = true, max_tokens = 256 (or leave the field out)")
    if fields["name"] != name:
        raise UserInputError(f"judge prompt {path}: name = {fields['name']!r}, expected {name!r} "
                             "(the file's own name)")
    if fields["version"] < 1:
        raise UserInputError(f"judge prompt {path}: version must be >= 1, found {fields['version']}")
    if fields["language"] != "en":
        raise UserInputError(f"judge prompt {path}: language must be 'en' (the protocols' judges "
                             f"are asked in English), found {fields['language']!r}")
    return PromptTemplate(
        benchmark=fields["benchmark"], name=name, version=fields["version"],
        language=fields["language"], template=fields["template"],
        answer_model=_answer_model(path, fields["answer"]), path=path,
        sha256=hashlib.sha256(data).hexdigest(), strict_json=fields.get("strict_json", False),
        max_tokens=fields.get("max_tokens"))


def _doctest_answer_model() -> type:
    from pydantic import BaseModel

    class Present(BaseModel):
        present: bool

    return Present


_Present = _doctest_answer_model()  # the answer model of load_prompt's example
