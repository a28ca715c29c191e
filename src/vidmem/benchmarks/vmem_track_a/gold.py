"""Load Track-A gold into :class:`~vidmem.benchmarks.vmem_track_a.schema.Film` values,
and find each film's source video.

* :func:`load_film` reads one film folder (the folder that holds ``gold/``);
  :func:`load_gold` every film under a gold root (one film, a dataset folder, or a folder
  of datasets: the rule is in :mod:`~vidmem.benchmarks.vmem_track_a.layout`). Both
  validate first (:mod:`~vidmem.benchmarks.vmem_track_a.validate`) and refuse gold with
  errors, listing them all.
* :func:`find_film_video`: the user's copy of a film is ``<videos>/<film_id>.mp4`` or the
  one ``.mp4`` file in ``<videos>/<film_id>/`` (the release's two layouts: a flat stitched
  file, as for LSMDC, or a folder per film, as for the Blender films). Zero or several
  candidates is an error that names the film and the paths looked at.
* :func:`check_video_length`: the video must last at least until the end of the film's
  last segment (one frame of slack).
"""

from __future__ import annotations

from pathlib import Path

from vidmem.benchmarks.jsonl_dataset import raise_on_load_errors
from vidmem.benchmarks.vmem_track_a.layout import FilmDir, check_lang, discover_films
from vidmem.benchmarks.vmem_track_a.schema import (
    ANNOTATIONS_FILE,
    REGISTRY_FILE,
    Entity,
    Film,
    Instruction,
    Segment,
    forbidden_entity_id,
)
from vidmem.benchmarks.vmem_track_a.validate import CheckedFilm, TrackAValidation, check_film
from vidmem.errors import UserInputError
from vidmem.io.video import VideoInfo, probe

__all__ = ["check_video_length", "find_film_video", "load_film", "load_gold"]

VIDEO_SUFFIX = ".mp4"


def _film(checked: CheckedFilm) -> Film:
    fid = checked.film.film_id
    chunks = sorted((c for _, c in checked.parsed[ANNOTATIONS_FILE]),
                    key=lambda c: (c.seconds_span[0], c.chunk_id))
    segments = tuple(
        Segment(
            film_id=fid, index=n, chunk_id=c.chunk_id,
            start_seconds=float(c.seconds_span[0]), end_seconds=float(c.seconds_span[1]),
            prompt=c.prompt, present=tuple(c.present),
            first_appearances=tuple(c.first_appearances),
            gold_instructions=tuple(Instruction(g.entity_id, g.requirement, g.note)
                                    for g in c.gold_instructions),
            forbidden=tuple(f if isinstance(f, str) else
                            (f.representation_id or forbidden_entity_id(f)) for f in c.forbidden),
            scenario_tags=tuple(c.scenario_tags),
        )
        for n, c in enumerate(chunks)
    )
    entities = {
        e.entity_id: Entity(
            entity_id=e.entity_id, kind=e.kind, name=e.name, description=e.description,
            first_chunk=e.first_chunk,
            presence_spans=tuple((float(a), float(b)) for a, b in e.presence_spans),
            state_events=tuple((ev.event_id, ev.chunk_id, ev.description) for ev in e.state_events),
        )
        for _, e in checked.parsed[REGISTRY_FILE]
    }
    return Film(film_id=fid, dataset=checked.film.dataset, segments=segments, entities=entities,
                lang=checked.lang, gold_dir=checked.film.gold_dir, files=dict(checked.files),
                sha256=dict(checked.sha256))


def _refuse(root: Path, problems: list, n_films: int, lang: str) -> None:
    report = TrackAValidation(root, tuple(problems), n_films=n_films)
    raise_on_load_errors(report, dataset="Track-A gold",
                         hint=f"run validate_gold({str(root)!r}, lang={lang!r}) (or vidmem "
                         "validate) to see every problem, with the warnings")


def load_film(film_dir: str | Path, lang: str = "zh") -> Film:
    """Load and validate one film folder.

    Args:
        film_dir: the folder that holds ``gold/``; its name is the film id, its parent's
            name the dataset.
        lang: ``zh`` reads ``gold/``; ``en`` reads ``gold/variants/en/<file>`` where present
            and ``gold/<file>`` for the files the variant lacks (:attr:`Film.fallbacks`).

    Raises:
        UserInputError: the gold has errors (all listed), or ``lang="en"`` and the film
            has no English variant.
    """
    check_lang(lang)
    path = Path(film_dir)
    resolved = path.resolve()
    checked = check_film(FilmDir(resolved.name, resolved.parent.name, path), lang)
    _refuse(path, checked.problems, 1, lang)
    return _film(checked)


def load_gold(root: str | Path, lang: str = "zh") -> list[Film]:
    """Load and validate every film under a gold root, sorted by (dataset, film id).

    Args:
        root: one film folder, a dataset folder (``BlenderOpenMovies/<film>/gold``) or a
            folder of datasets (``trackA/<dataset>/<film>/gold``); film ids must be unique
            across datasets.
        lang: ``zh`` or ``en``, as for :func:`load_film`; every film must have it.

    Raises:
        UserInputError: no gold found, duplicate film ids, or any film with errors (all
            problems of all films listed at once).
    """
    check_lang(lang)
    root = Path(root)
    dirs, problems = discover_films(root)
    checked = [check_film(d, lang) for d in dirs]
    for c in checked:
        problems += c.problems
    _refuse(root, problems, len(dirs), lang)
    return [_film(c) for c in checked]


def find_film_video(videos_dir: str | Path, film_id: str) -> Path:
    """The source video of ``film_id`` in ``videos_dir``.

    ``<videos_dir>/<film_id>.mp4``, or the one ``*.mp4`` file in ``<videos_dir>/<film_id>/``
    (hidden files such as ``._x.mp4`` are skipped). Exactly one candidate must exist.

    Raises:
        UserInputError: no candidate, or more than one, naming the film and the paths.
    """
    videos = Path(videos_dir)
    if not videos.is_dir():
        raise UserInputError(f"videos folder {videos} (for film {film_id}) is not a folder",
                             hint="pass the folder that holds <film_id>.mp4 or <film_id>/<any>.mp4")
    flat, folder = videos / f"{film_id}{VIDEO_SUFFIX}", videos / film_id
    found = [flat] if flat.is_file() else []
    if folder.is_dir():
        found += sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                        and p.suffix.lower() == VIDEO_SUFFIX)
    if len(found) == 1:
        return found[0]
    if not found:
        raise UserInputError(
            f"no video for film {film_id}: looked for {flat} and {folder}/*{VIDEO_SUFFIX}",
            hint=f"put the full-length film at {flat} or as the only {VIDEO_SUFFIX} file in {folder}/")
    listed = ", ".join(str(p) for p in found)
    raise UserInputError(
        f"{len(found)} candidate videos for film {film_id}: {listed}; expected exactly one",
        hint=f"keep one: remove or rename the others (only {flat} or one file in {folder}/)")


def check_video_length(film: Film, video: str | Path) -> VideoInfo:
    """Probe ``video`` and check that it covers ``film``'s last segment.

    One frame interval of slack is allowed (a film cut at 462.96 s covers a segment
    ending at 463.0 s at 25 fps).

    Returns:
        The video's :class:`~vidmem.io.video.VideoInfo`.

    Raises:
        UserInputError: the video is shorter than the end of the last segment.
        VideoError: the file is not a readable video.
    """
    info = probe(video)
    needed = film.end_seconds
    slack = 1.0 / info.fps if info.fps > 0 else 0.0
    if info.duration_seconds + slack + 1e-6 < needed:
        raise UserInputError(
            f"video {video} of film {film.film_id} lasts {info.duration_seconds:.3f} s; the "
            f"film's last segment ends at {needed:.3f} s, so it needs at least {needed:.3f} s",
            hint="use the full-length film (not a trailer or a cut), matching the gold's "
                 "timeline from 0 s")
    return info
