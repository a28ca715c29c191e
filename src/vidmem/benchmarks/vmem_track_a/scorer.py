"""Score one film: replay every policy causally, judge each distinct reference once, sweep K.

For a film, :meth:`TrackAScorer.score_film`

1. replays each policy over the film's segments with the causal guard
   (:func:`vidmem.memory.guard.replay`), composing once per segment with the largest
   budget; every policy shares one frame source, so the film is decoded once and each
   frame embedded once per encoder;
2. collects the distinct (segment, frame) pairs over all policies and budgets and asks
   the judge each one once (``prompts/reference.toml``): a frame two policies picked for
   the same segment is one question, and K = 1..16 are prefixes of one ranking, so no
   budget asks anything new;
3. with ``same_view`` on, asks ``prompts/same_view.toml`` for every pair of references of
   one ranking that show the same entity (a pair of frames is one question wherever it
   recurs), which gives the view keys of R_V;
4. embeds the distinct reference frames with the similarity encoder (R_S);
5. scores every (policy, K) with :mod:`vidmem.metrics.reference_evidence`.

Work done once: the replay's frame source keeps the judge's thumbnail of every frame it
decodes (up to :data:`KEEP_BYTES`) and embeds every decoded frame with the similarity
encoder into the film's embedding cache while the pixels are in memory, so steps 2-4
read the video again only for reference frames no replay decoded, and embed only
those. A reference's pixels are the same either way (the frame on screen at its time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from vidmem.benchmarks.prompts import load_prompt
from vidmem.benchmarks.vmem_track_a.answers import reference_answer_model, reference_labels
from vidmem.benchmarks.vmem_track_a.config import ScorerConfig
from vidmem.benchmarks.vmem_track_a.gold import load_film
from vidmem.benchmarks.vmem_track_a.schema import Film
from vidmem.benchmarks.vmem_track_a.schema import Segment as GoldSegment
from vidmem.errors import UserInputError
from vidmem.io.safe_paths import inside
from vidmem.io.video import read_frames_at
from vidmem.memory.embeddings import EmbeddingCache
from vidmem.memory.frames import FilmFrames
from vidmem.memory.frames import Segment as MemorySegment
from vidmem.memory.guard import prepare, replay
from vidmem.memory.policy import FilmContext, load_policy
from vidmem.metrics import reference_evidence as ev
from vidmem.models.loading import load_backend

__all__ = ["TrackAScorer"]

PACKAGE = "vidmem.benchmarks.vmem_track_a"
#: roster descriptions are cut here, as the reference scorer does
DESCRIPTION_CHARS = 70
#: judge thumbnails the replay keeps per film (a 384 x 216 one is 249 kB: ~8,600
#: frames, 48 min on the 1 + 2 fps grids); frames past it are read again for the judge
KEEP_BYTES = 2 * 1024**3


def _ms(seconds: float) -> int:
    return int(round(float(seconds) * 1000))


def _thumbnail(frame: np.ndarray, side: int) -> np.ndarray:
    image = Image.fromarray(frame)
    image.thumbnail((side, side))
    return np.asarray(image.convert("RGB"))


@dataclass(frozen=True)
class _ReadFrame:
    """A reference frame for the embedding cache: its time (ms) and the pixels read now
    (``None`` for a frame the replay embedded, whose pixels are never asked for)."""

    key: int
    image: np.ndarray | None

    def pixels(self) -> np.ndarray:
        assert self.image is not None, f"frame {self.key} ms was neither embedded nor read"
        return self.image


class TrackAScorer:
    """The loaded encoders and judge of one configuration, and the film scoring."""

    def __init__(self, config: ScorerConfig) -> None:
        self.config = config
        opts = {k: dict(v) for k, v in config.backend_options.items()}
        self.segment_text = load_backend(config.segment_text_embedder,
                                         opts.get(config.segment_text_embedder), role="text_embedder")
        self.frame = (None if config.frame_embedder is None else
                      load_backend(config.frame_embedder, opts.get(config.frame_embedder),
                                   role="image_embedder"))
        self.keyframe = load_backend(config.keyframe_embedder, opts.get(config.keyframe_embedder),
                                     role="image_embedder")
        self.similarity = (self.keyframe if config.similarity_embedder == config.keyframe_embedder
                           else load_backend(config.similarity_embedder,
                                             opts.get(config.similarity_embedder),
                                             role="image_embedder"))
        self.judge = load_backend(config.judge, opts.get(config.judge), role="judge")
        self.reference_prompt = load_prompt(PACKAGE, "reference")
        self.same_view_prompt = load_prompt(PACKAGE, "same_view")

    # ------------------------------------------------------------------ policies

    def policy_options(self) -> dict[str, Any]:
        """What a policy constructor may take, by parameter name."""
        return {"segment_text_embedder": self.segment_text, "frame_text_embedder": self.frame,
                "frame_image_embedder": self.frame, "keyframe_embedder": self.keyframe,
                "seed": self.config.seed}

    def make_policy(self, spec: str) -> Any:
        return load_policy(spec, offered=self.policy_options())

    # ------------------------------------------------------------------ scoring

    def score_film(self, request: Mapping[str, Any]) -> dict[str, Any]:
        film = load_film(request["film_dir"], self.config.lang)
        if dict(film.sha256) != dict(request["gold_sha256"]):
            raise UserInputError(
                f"film {film.film_id}: its gold files changed after the run listed them",
                hint="rerun with --overwrite (or a new --out) to score the current gold")
        video = Path(request["video"])
        source = FilmFrames(video, film_id=film.film_id, embeddings=EmbeddingCache())
        segments = [MemorySegment(s.index, s.start_seconds, s.end_seconds, text=s.prompt)
                    for s in film.segments]
        policies = {name: self.make_policy(name) for name in self.config.policies}
        prepare(source, policies.values())
        # while a segment's pixels are in memory: the judge's image and the R_S embedding
        for fps in source.rates:
            source.require(self.similarity, fps)
        source.keep_images(partial(_thumbnail, side=self.config.judge_image_side), KEEP_BYTES)
        budget = self.config.budget
        rankings: dict[str, list[Any]] = {}
        for name, policy in policies.items():
            rankings[name] = replay(policy, segments, source, budget,
                                    context=FilmContext(film.film_id))
        return self._judge_and_score(film, source, rankings, policies, request)

    def _reference_frames(self, source: FilmFrames, times: Sequence[int]
                          ) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
        """The judge's image and the similarity embedding of each reference time (ms):
        what the replay kept and embedded, and the rest read and embedded now."""
        cache = source.embeddings
        missing = [t for t in times if source.kept_image(t) is None
                   or not cache.has_image(self.similarity, t)]
        read = dict(zip(missing, read_frames_at(source.path, [t / 1000.0 for t in missing]),
                        strict=True)) if missing else {}
        side = self.config.judge_image_side
        images = {t: source.kept_image(t) if t not in read else _thumbnail(read[t], side)
                  for t in times}
        # frames the replay embedded are served from the film's cache; the others are
        # embedded from the pixels just read (the same frame on screen at that time)
        rows = cache.image_rows(self.similarity, [_ReadFrame(t, read.get(t)) for t in times])
        matrix = cache.image_matrix(self.similarity)
        return images, {t: matrix[row] for t, row in zip(times, rows, strict=True)}

    def _judge_and_score(self, film: Film, source: FilmFrames, rankings: Mapping[str, list[Any]],
                         policies: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
        gold = {s.index: s for s in film.segments}
        wanted = sorted({(r.segment_index, _ms(ref.source_seconds))
                         for results in rankings.values() for r in results
                         for ref in r.references})
        times = sorted({t for _, t in wanted})
        images, embeddings = self._reference_frames(source, times)
        thumbs = _write_thumbnails(request.get("thumbnails_dir"), film.film_id, images)
        labels, unparsable, asked = self._judge_references(film, gold, wanted, images)
        views, view_counts = (self._views(film, rankings, labels, images)
                              if self.config.same_view else (None, {}))
        per_policy: dict[str, Any] = {}
        details: dict[str, Any] = {}
        for name, results in rankings.items():
            evidence = []
            seg_rows = []
            for r in results:
                seg = gold[r.segment_index]
                present = frozenset(seg.present)
                refs = [(r.segment_index, _ms(x.source_seconds)) for x in r.references]
                shows = [None if key in unparsable else labels.get(key, frozenset()) for key in refs]
                evidence.append(ev.SegmentEvidence(
                    present=present, candidates=present - frozenset(seg.first_appearances),
                    shows=shows,
                    views=None if views is None else [views[name].get((r.segment_index, i))
                                                      for i in range(len(refs))],
                    embeddings=np.stack([embeddings[t] for _, t in refs]) if refs else None))
                seg_rows.append({"segment": r.segment_index, "chunk_id": seg.chunk_id,
                                 "dropped": dict(r.dropped_by_reason),
                                 "refs": [{"t": t / 1000.0, "score": round(float(x.score), 6),
                                           "shows": None if s is None else sorted(s),
                                           "thumbnail": thumbs.get(t)}
                                          for (_, t), x, s in zip(refs, r.references, shows,
                                                                  strict=True)]})
            sweep = ev.budget_sweep(evidence, range(1, self.config.budget + 1))
            per_policy[name] = {
                "by_budget": {str(k): asdict(ev.film_means(scores)) for k, scores in sweep.items()},
                "dropped": _sum_reasons(results),
                "compose_ms_mean": round(1000 * float(np.mean([r.compose_seconds for r in results])), 3)
                if results else None,
                "unparsable": sum(1 for r in results for x in r.references
                                  if (r.segment_index, _ms(x.source_seconds)) in unparsable),
            }
            details[name] = seg_rows
        naive = sum(min(k, len(r.references)) for results in rankings.values()
                    for r in results for k in range(1, self.config.budget + 1))
        response = {
            "film_id": film.film_id, "dataset": film.dataset, "segments": len(film.segments),
            "policies": per_policy, "details": details,
            "judge_questions": {"references": len(wanted), "asked": asked,
                                "same_view_pairs": view_counts.get("pairs", 0),
                                "naive_reference_judgements": naive},
            "policy_protocols": {n: _protocol(p) for n, p in policies.items()},
        }
        score = {"film_id": film.film_id, "dataset": film.dataset,
                 "policies": {n: {"by_budget": v["by_budget"], "dropped": v["dropped"],
                                  "unparsable": v["unparsable"]} for n, v in per_policy.items()},
                 "judge_questions": response["judge_questions"]}
        return {"response": response, "score": score}

    def _judge_references(self, film: Film, gold: Mapping[int, GoldSegment],
                          wanted: Sequence[tuple[int, int]], images: Mapping[int, np.ndarray]
                          ) -> tuple[dict[tuple[int, int], frozenset[str]], set[tuple[int, int]], int]:
        asks, keys = [], []
        for seg_index, t in wanted:
            seg = gold[seg_index]
            roster = [film.entities[e] for e in seg.present if e in film.entities]
            if not roster:
                continue  # nothing could be shown: no question
            rows = [{"entity_id": e.entity_id, "name": e.name, "kind": e.kind,
                     "description": e.description[:DESCRIPTION_CHARS]} for e in roster]
            req = self.reference_prompt.request(
                f"{film.film_id}/segment-{seg.chunk_id}/t{t / 1000.0:.3f}", [images[t]],
                answer_model=reference_answer_model([e.entity_id for e in roster]), roster=rows)
            # judges that are not VLMs (judge/sim-cards) read the roster as data
            payload = {"roster": [{**r, "appearance": r["description"]} for r in rows]}
            asks.append(replace(req, payload=payload))
            keys.append((seg_index, t))
        results = self.judge.judge_many(asks) if asks else []
        labels, unparsable = {}, set()
        for key, req, res in zip(keys, asks, results, strict=True):
            if res.status == "ok" and res.data is not None:
                labels[key] = reference_labels(res.data, {r["entity_id"] for r in req.payload["roster"]})
            else:
                unparsable.add(key)
        return labels, unparsable, len(asks)

    def _views(self, film: Film, rankings: Mapping[str, list[Any]],
               labels: Mapping[tuple[int, int], frozenset[str]], images: Mapping[int, np.ndarray]
               ) -> tuple[dict[str, dict[tuple[int, int], dict[str, int]]], dict[str, int]]:
        """View keys per (policy, segment, rank): a reference's key for entity e is that of
        the first higher-ranked reference of e the judge called the same view, else new."""
        pairs: dict[tuple[str, int, int], Any] = {}
        for results in rankings.values():
            for r in results:
                refs = [_ms(x.source_seconds) for x in r.references]
                for j, tj in enumerate(refs):
                    for e in labels.get((r.segment_index, tj), ()):
                        for ti in refs[:j]:
                            if ti != tj and e in labels.get((r.segment_index, ti), ()):
                                pairs.setdefault((e, min(ti, tj), max(ti, tj)), None)
        asks = []
        for e, a, b in pairs:
            ent = film.entities[e]
            asks.append(self.same_view_prompt.request(
                f"{film.film_id}/{e}/t{a / 1000.0:.3f}-t{b / 1000.0:.3f}", [images[a], images[b]],
                entity_name=ent.name, entity_kind=ent.kind,
                entity_description=ent.description[:DESCRIPTION_CHARS]))
        answers = self.judge.judge_many(asks) if asks else []
        same = {key: bool(res.status == "ok" and res.data and res.data.get("same_view"))
                for key, res in zip(pairs, answers, strict=True)}
        views: dict[str, dict[tuple[int, int], dict[str, int]]] = {}
        for name, results in rankings.items():
            views[name] = {}
            for r in results:
                refs = [_ms(x.source_seconds) for x in r.references]
                for j, tj in enumerate(refs):
                    keys = {}
                    for e in labels.get((r.segment_index, tj), ()):
                        keys[e] = j
                        for i, ti in enumerate(refs[:j]):
                            earlier = views[name].get((r.segment_index, i), {})
                            if e in earlier and (ti == tj or same.get((e, min(ti, tj), max(ti, tj)))):
                                keys[e] = earlier[e]
                                break
                    views[name][(r.segment_index, j)] = keys
        return views, {"pairs": len(asks)}


#: longer side of the stored reference thumbnails, pixels
THUMBNAIL_SIDE = 128


def _write_thumbnails(folder: str | None, film_id: str,
                      images: Mapping[int, np.ndarray]) -> dict[int, str]:
    """Save each reference frame small (``<folder>/<film>/t<ms>.jpg``); return the paths
    relative to the run directory's ``thumbnails`` folder (none without a folder)."""
    if not folder:
        return {}
    out = inside(folder, Path(folder) / film_id)  # the film id is checked safe at validation
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for t, image in images.items():
        name = f"t{t:08d}.jpg"
        target = out / name
        if not target.is_file():
            Image.fromarray(_thumbnail(image, THUMBNAIL_SIDE)).save(target, quality=85)
        paths[t] = f"{film_id}/{name}"
    return paths


def _sum_reasons(results: Sequence[Any]) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in results:
        for reason, n in r.dropped_by_reason.items():
            total[reason] = total.get(reason, 0) + int(n)
    return total


def _protocol(policy: Any) -> Any:
    describe = getattr(policy, "protocol", None)
    return describe() if callable(describe) else {"policy": getattr(policy, "name", "?")}
