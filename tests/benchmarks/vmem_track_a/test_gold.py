"""Loading the official Track-A sample gold: both films, both languages, the layouts of a
gold root, the counts, and how a film's source video is found and checked.

The expected numbers were counted by hand from the JSON files, not with the code under
test, with jq in ``data/vmem_track_a_sample/BlenderOpenMovies``; for spring with
``d=spring/gold``, for caminandes with ``d=caminandes_2_gran_dillama/gold/variants/en``:

* segments:   ``jq '.chunks|length' $d/chunk_annotations.json`` -> 44 / 16
* seconds:    ``jq '[.chunks[]|.seconds_span[1]-.seconds_span[0]]|add' $d/chunk_annotations.json``
  -> 456 / 134
* last end:   ``jq -c '.chunks[-1].seconds_span' $d/chunk_annotations.json`` -> [453,463] / [135,144]
* kinds:      ``jq -c '[.entities[].kind]|group_by(.)|map({(.[0]):length})|add' $d/entity_registry.json``
  -> {"character":2,"location":5,"prop":4} / {"character":1,"location":1,"prop":3}
* slices:     ``jq -c '[.chunks[].scenario_tags[]]|group_by(.)|map({(.[0]):length})|add' $d/chunk_annotations.json``
  -> {"none":29,"re-appearance":12,"scene-return":2,"state-change":4} /
  {"none":9,"re-appearance":5,"state-change":5}; no segment repeats a tag, three per film
  carry two (``jq -c '[.chunks[]|select(.scenario_tags|length>1)|.chunk_id]'`` -> [9,20,35] /
  [11,12,15]), so the slice counts add up to 47 / 19.
* instructions: ``jq '[.chunks[].gold_instructions|length]|add'`` -> 122 / 39.
"""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest
from track_a_support import CAMINANDES, SAMPLE, SPRING

from vidmem.benchmarks.vmem_track_a.gold import (
    check_video_length,
    find_film_video,
    load_film,
    load_gold,
)
from vidmem.benchmarks.vmem_track_a.schema import Film, Instruction, Segment
from vidmem.benchmarks.vmem_track_a.stats import corpus_stats
from vidmem.errors import UserInputError
from vidmem.io.video import write_video


def test_spring_loads_in_chinese():
    film = load_film(SPRING)
    assert (film.film_id, film.dataset, film.lang) == ("spring", "BlenderOpenMovies", "zh")
    assert len(film.segments) == 44
    assert sum(s.duration_seconds for s in film.segments) == 456.0
    assert film.end_seconds == 463.0
    assert [s.index for s in film.segments] == list(range(44))
    assert all(a.end_seconds <= b.start_seconds for a, b in zip(film.segments[:-1], film.segments[1:], strict=True))
    first = film.segments[0]
    assert first == Segment(
        film_id="spring", index=0, chunk_id=0, start_seconds=0.0, end_seconds=17.0,
        prompt="冰封岩壁上悬挂着冻结的有机物，冰柱垂落，水滴缓缓滴落。", present=("loc_001",),
        first_appearances=("loc_001",),
        gold_instructions=(Instruction("loc_001", "introduce", ""),), forbidden=(),
        scenario_tags=("none",))
    assert sum(len(s.gold_instructions) for s in film.segments) == 122
    girl = film.entities["char_001"]
    assert (girl.kind, girl.name, girl.first_chunk) == ("character", "红衣女孩", 2)
    assert girl.presence_spans[0] == (23.0, 80.0)
    assert girl.state_events[0][:2] == ("evt_c020_char_001", 20)
    assert film.fallbacks == ()
    for name, path in film.files.items():
        assert path == SPRING / "gold" / name
        assert film.sha256[name] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_caminandes_loads_in_english_with_the_index_from_gold():
    film = load_film(CAMINANDES, lang="en")
    assert film.lang == "en" and len(film.segments) == 16
    assert sum(s.duration_seconds for s in film.segments) == 134.0
    assert (film.segments[0].start_seconds, film.end_seconds) == (3.0, 144.0)
    assert film.entities["char_001"].name == "Llama"
    assert film.segments[1].prompt.startswith("Llama, orange-brown")
    assert sum(len(s.gold_instructions) for s in film.segments) == 39
    # the variant has no chunk_index.json: it is read from gold/, and the Film says so
    assert film.fallbacks == ("chunk_index.json",)
    assert film.files["chunk_index.json"] == CAMINANDES / "gold" / "chunk_index.json"
    assert film.files["chunk_annotations.json"] == (
        CAMINANDES / "gold" / "variants" / "en" / "chunk_annotations.json")


def test_english_without_a_variant_is_an_error():
    with pytest.raises(UserInputError, match="no 'en' variant") as exc:
        load_film(SPRING, lang="en")
    assert "spring/gold/variants/en" in str(exc.value)


def test_chinese_for_a_film_that_has_only_the_variant_is_an_error_that_says_use_en():
    with pytest.raises(UserInputError) as exc:
        load_film(CAMINANDES)
    text = str(exc.value)
    assert "caminandes_2_gran_dillama/gold/chunk_annotations.json: missing file" in text
    assert "caminandes_2_gran_dillama/gold/entity_registry.json: missing file" in text
    assert "use lang='en'" in text


def test_unknown_language_is_refused():
    with pytest.raises(UserInputError, match="unknown gold language 'fr'"):
        load_film(SPRING, lang="fr")


def test_corpus_counts_of_the_two_sample_films():
    films = [load_film(SPRING), load_film(CAMINANDES, lang="en")]
    stats = corpus_stats(films)
    assert (stats["films"], stats["segments"]) == (2, 60)
    assert stats["hours"] == pytest.approx((456 + 134) / 3600)
    assert stats["entities"] == {"character": 3, "prop": 7, "location": 6, "total": 16}
    assert stats["slices"] == {"none": 38, "re-appearance": 17, "scene-return": 2, "state-change": 9}
    assert list(stats["by_dataset"]) == ["BlenderOpenMovies"]
    block = stats["by_dataset"]["BlenderOpenMovies"]
    assert block == {k: v for k, v in stats.items() if k != "by_dataset"}
    spring = corpus_stats([films[0]])
    assert spring["entities"] == {"character": 2, "prop": 4, "location": 5, "total": 11}
    assert spring["slices"] == {"none": 29, "re-appearance": 12, "scene-return": 2, "state-change": 4}
    caminandes = corpus_stats([films[1]])
    assert caminandes["entities"] == {"character": 1, "prop": 3, "location": 1, "total": 5}
    assert caminandes["slices"] == {"none": 9, "re-appearance": 5, "state-change": 5}


# --------------------------------------------------------------------------- gold roots


def test_load_gold_reads_one_film_folder():
    assert [f.film_id for f in load_gold(SPRING)] == ["spring"]


def test_load_gold_reads_a_dataset_folder_and_a_folder_of_datasets(sample):
    # the sample is mixed: spring has no en variant, caminandes no zh annotations
    with pytest.raises(UserInputError, match="caminandes_2_gran_dillama/gold/chunk_annotations.json"):
        load_gold(sample, "zh")
    shutil.rmtree(sample / "BlenderOpenMovies" / "caminandes_2_gran_dillama")
    assert [(f.dataset, f.film_id) for f in load_gold(sample)] == [("BlenderOpenMovies", "spring")]
    assert [f.film_id for f in load_gold(sample / "BlenderOpenMovies")] == ["spring"]
    # a second dataset folder; film ids sorted by (dataset, film)
    shutil.copytree(SPRING, sample / "LSMDC" / "0001_American_Beauty")
    films = load_gold(sample)
    assert [(f.dataset, f.film_id) for f in films] == [
        ("BlenderOpenMovies", "spring"), ("LSMDC", "0001_American_Beauty")]
    assert corpus_stats(films)["by_dataset"]["LSMDC"]["segments"] == 44


def test_film_ids_must_be_unique_across_datasets(sample):
    shutil.copytree(SPRING, sample / "LSMDC" / "spring")
    with pytest.raises(UserInputError, match="film id found in two datasets"):
        load_gold(sample, "zh")


def test_a_root_without_gold_says_which_layouts_it_looked_for(tmp_path):
    with pytest.raises(UserInputError) as exc:
        load_gold(SAMPLE.parent)  # data/ holds the sample root, one level too high
    assert "no Track-A gold found" in str(exc.value)
    assert "<dataset>/<film>/gold" in str(exc.value)
    with pytest.raises(UserInputError, match="does not exist"):
        load_gold(tmp_path / "nowhere")


def test_mixed_film_and_dataset_folders_are_refused(sample):
    shutil.copytree(SPRING, sample / "spring")  # a film next to BlenderOpenMovies/
    with pytest.raises(UserInputError, match="mixes film folders"):
        load_gold(sample)


# --------------------------------------------------------------------------- videos


def _video(path, seconds, fps=8):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_video(path, [np.zeros((16, 16, 3), np.uint8)] * round(seconds * fps), fps)
    return path


def test_video_flat_layout(tmp_path):
    video = _video(tmp_path / "spring.mp4", 0.5)
    assert find_film_video(tmp_path, "spring") == video


def test_video_folder_layout_skips_hidden_and_other_files(tmp_path):
    video = _video(tmp_path / "spring" / "spring_4k.mp4", 0.5)
    (tmp_path / "spring" / "._spring_4k.mp4").write_bytes(b"")
    (tmp_path / "spring" / "LICENSE.txt").write_text("CC BY")
    assert find_film_video(tmp_path, "spring") == video


def test_no_video_names_the_film_and_the_paths(tmp_path):
    with pytest.raises(UserInputError) as exc:
        find_film_video(tmp_path, "spring")
    text = str(exc.value)
    assert "no video for film spring" in text
    assert str(tmp_path / "spring.mp4") in text and str(tmp_path / "spring") + "/*.mp4" in text


def test_two_candidates_are_refused(tmp_path):
    _video(tmp_path / "spring" / "a.mp4", 0.5)
    _video(tmp_path / "spring" / "b.mp4", 0.5)
    with pytest.raises(UserInputError, match="2 candidate videos for film spring"):
        find_film_video(tmp_path, "spring")
    shutil.rmtree(tmp_path / "spring")
    _video(tmp_path / "spring" / "a.mp4", 0.5)
    _video(tmp_path / "spring.mp4", 0.5)  # flat and folder: ambiguous too
    with pytest.raises(UserInputError, match="2 candidate videos"):
        find_film_video(tmp_path, "spring")


def test_video_length_against_the_last_segment(tmp_path):
    film = Film("f", "d", (Segment("f", 0, 0, 0.0, 1.0), Segment("f", 1, 1, 1.0, 2.0)), {})
    assert check_video_length(film, _video(tmp_path / "ok.mp4", 2.0)).duration_seconds == 2.0
    # one frame short (1.875 s at 8 fps) is within the one-frame slack
    check_video_length(film, _video(tmp_path / "edge.mp4", 1.875))
    with pytest.raises(UserInputError) as exc:
        check_video_length(film, _video(tmp_path / "short.mp4", 1.5))
    text = str(exc.value)
    assert "film f lasts 1.500 s" in text and "needs at least 2.000 s" in text
