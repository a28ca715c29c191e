"""Validation of Track-A gold: the samples pass with zero errors; a copy broken in one
place gives exactly the problem(s) it should, by file and field; several breaks are all
reported at once."""

from __future__ import annotations

import pytest
from track_a_support import CAMINANDES, SAMPLE, SPRING, read, write

from vidmem.benchmarks.vmem_track_a.validate import validate_film, validate_gold

ANN = "spring/gold/chunk_annotations.json"
IDX = "spring/gold/chunk_index.json"
REG = "spring/gold/entity_registry.json"


@pytest.fixture()
def spring(sample):
    """The writable copy of spring (validating the whole sample copy in zh would add
    caminandes' missing Chinese files to every report)."""
    return sample / "BlenderOpenMovies" / "spring"


def _errors(report):
    return [(p.where, p.field) for p in report.errors]


def test_spring_validates_clean():
    report = validate_gold(SPRING, "zh")
    assert report.ok and report.problems == ()
    assert (report.n_films, report.n_rows) == (1, 44)
    assert "1 film(s), 44 segment(s), 0 error(s), 0 warning(s)" in report.format()


def test_caminandes_english_has_zero_errors_and_the_release_quirks_as_warnings():
    report = validate_film(CAMINANDES, "en")
    assert report.errors == ()
    where = "caminandes_2_gran_dillama/gold/variants/en/chunk_annotations.json"
    warnings = {(p.where, p.field): p.message for p in report.warnings}
    # prompts left in Chinese in the English variant, and one cut short mid-sentence
    assert set(warnings) == {(where, f"chunks[{i}].prompt") for i in (5, 6, 8, 12)}
    assert all("Chinese text in the English variant" in warnings[(where, f"chunks[{i}].prompt")]
               for i in (6, 8, 12))
    assert "atop the" in warnings[(where, "chunks[5].prompt")]
    assert "cut short" in warnings[(where, "chunks[5].prompt")]


def test_the_mixed_sample_root_in_each_language():
    zh = validate_gold(SAMPLE, "zh")
    assert _errors(zh) == [("caminandes_2_gran_dillama/gold/chunk_annotations.json", ""),
                           ("caminandes_2_gran_dillama/gold/entity_registry.json", "")]
    assert all("use lang='en'" in p.message for p in zh.errors)
    en = validate_gold(SAMPLE, "en")
    assert _errors(en) == [("spring/gold/variants/en", "")]
    assert "no 'en' variant" in en.errors[0].message


def test_bad_json(spring):
    path = spring / "gold" / "chunk_annotations.json"
    text = path.read_text(encoding="utf-8")
    line = text[:text.index('"present"')].count("\n") + 1
    path.write_text(text.replace('"present"', '"present" :,', 1), encoding="utf-8")
    report = validate_gold(spring)
    assert _errors(report) == [(ANN, "")]
    problem = report.errors[0]
    assert problem.message.startswith(f"not valid JSON (Expecting value at line {line}")
    assert problem.line == line


def test_missing_file(spring):
    (spring / "gold" / "entity_registry.json").unlink()
    report = validate_gold(spring)
    assert [(p.where, p.field, p.message.split(";")[0]) for p in report.errors] == [
        (REG, "", "missing file")]


def test_unknown_entity_ids(spring):
    path = spring.parent / ANN
    data = read(path)
    data["chunks"][3]["present"].append("char_0O1")
    typo = f"chunks[3].present[{len(data['chunks'][3]['present']) - 1}]"
    data["chunks"][4]["gold_instructions"][0]["entity_id"] = "prop_999"
    data["chunks"][5]["forbidden"] = ["prop_404@c003", {"representation_id": "prop_001@c003"}]
    write(path, data)
    report = validate_gold(spring)
    assert _errors(report) == [
        (ANN, typo), (ANN, "chunks[4].gold_instructions[0].entity_id"),
        (ANN, "chunks[5].forbidden[0]")]
    assert "did you mean 'char_001'?" in report.errors[0].message
    assert "'prop_404' is not in entity_registry.json" in report.errors[2].message
    assert report.warnings == ()  # an unknown id is an error only, not also "not in present"


def test_overlapping_spans(spring):
    path = spring.parent / ANN
    data = read(path)
    data["chunks"][5]["seconds_span"] = [60.0, 78.0]  # chunk 4 is [52, 63]
    write(path, data)
    report = validate_gold(spring)
    assert _errors(report) == [(ANN, "chunks[5].seconds_span"), (IDX, "chunks[5].seconds_span")]
    assert "overlaps chunks[4]" in report.errors[0].message
    assert "differs from chunk 5's [60.0, 78.0]" in report.errors[1].message


def test_spans_out_of_order_and_end_not_after_start(spring):
    for name in (ANN, IDX):
        path = spring.parent / name
        data = read(path)
        data["chunks"][2], data["chunks"][3] = data["chunks"][3], data["chunks"][2]
        data["chunks"][7]["seconds_span"] = [98.0, 84.0]
        write(path, data)
    report = validate_gold(spring)
    assert sorted(_errors(report)) == sorted([
        (ANN, "chunks[3].seconds_span"), (ANN, "chunks[7].seconds_span"),
        (IDX, "chunks[7].seconds_span")])
    messages = {(p.where, p.field): p.message for p in report.errors}
    assert "starts before chunks[2]" in messages[(ANN, "chunks[3].seconds_span")]
    assert "expected end > start" in messages[(IDX, "chunks[7].seconds_span")]
    assert "fix: write [start_seconds, end_seconds]" in messages[(IDX, "chunks[7].seconds_span")]


def test_bad_kind(spring):
    path = spring.parent / REG
    data = read(path)
    data["entities"][0]["kind"] = "charakter"
    write(path, data)
    report = validate_gold(spring)
    assert _errors(report) == [(REG, "entities[0].kind")]
    message = report.errors[0].message
    assert "'charakter'" in message and "did you mean 'character'?" in message


def test_missing_en_variant(sample):
    film = sample / "BlenderOpenMovies" / "caminandes_2_gran_dillama"
    for path in (film / "gold" / "variants" / "en").iterdir():
        path.unlink()
    report = validate_gold(film, "en")
    assert _errors(report) == [("caminandes_2_gran_dillama/gold/variants/en", "")]


def test_ids_disagreeing_between_index_and_annotations(spring):
    path = spring.parent / IDX
    data = read(path)
    data["chunks"].pop()  # chunk 43 only in the annotations
    data["chunks"].append({"chunk_id": 44, "seconds_span": [463.0, 470.0]})
    write(path, data)
    report = validate_gold(spring)
    assert _errors(report) == [(IDX, "chunks"), (ANN, "chunks")]
    assert "chunk ids [44] are not in chunk_annotations.json" in report.errors[0].message
    assert "chunk ids [43] are not in chunk_index.json" in report.errors[1].message


def test_duplicates_strict_types_and_first_appearance_off_screen(spring):
    ann, reg = spring.parent / ANN, spring.parent / REG
    data = read(ann)
    data["chunks"][1]["chunk_id"] = "1"                   # a string is not a chunk id
    data["chunks"][2]["first_appearances"].append("loc_001")  # not on screen in chunk 2
    data["chunks"][3]["present"].append(data["chunks"][3]["present"][0])
    fa, dup = (f"chunks[2].first_appearances[{len(data['chunks'][2]['first_appearances']) - 1}]",
               f"chunks[3].present[{len(data['chunks'][3]['present']) - 1}]")
    del data["chunks"][4]["scenario_tags"]
    data["chunks"][6]["forbidden"] = [7]                     # neither an id nor an object
    write(ann, data)
    registry = read(reg)
    registry["entities"].append(dict(registry["entities"][0]))
    write(reg, registry)
    report = validate_gold(spring)
    fields = {p.field: p.message for p in report.errors}
    assert set(fields) == {"chunks[1].chunk_id", fa, dup, "chunks[4].scenario_tags",
                           "chunks[6].forbidden[0]", "entities[11].entity_id"}
    assert len(report.errors) == len(fields)  # one problem per field, union alternatives merged
    assert fields["chunks[6].forbidden[0]"].endswith("found integer 7")
    assert "valid integer" in fields["chunks[1].chunk_id"] and "'1'" in fields["chunks[1].chunk_id"]
    assert "not in this chunk's present[]" in fields[fa]
    assert "duplicate entity id" in fields[dup]
    assert fields["chunks[4].scenario_tags"].startswith("missing")
    assert "duplicate entity_id 'char_001' (also entities[0])" in fields["entities[11].entity_id"]
    # chunk 1's id is unusable: the index and annotations are not compared on it


def test_every_problem_at_once_across_films(sample):
    blender = sample / "BlenderOpenMovies"
    (blender / IDX).write_text("{not json", encoding="utf-8")
    registry = read(blender / REG)
    registry["entities"][3]["kind"] = "object"
    write(blender / REG, registry)
    cam = blender / "caminandes_2_gran_dillama" / "gold" / "variants" / "en" / "chunk_annotations.json"
    data = read(cam)
    data["chunks"][0]["present"] = ["loc_002"]
    data["chunks"][2]["prompt"] = ""
    write(cam, data)
    report = validate_gold(sample, "en")
    assert _errors(report) == [
        ("caminandes_2_gran_dillama/gold/variants/en/chunk_annotations.json", "chunks[0].present[0]"),
        ("caminandes_2_gran_dillama/gold/variants/en/chunk_annotations.json",
         "chunks[0].first_appearances[0]"),
        ("spring/gold/variants/en", ""),
    ]
    assert ("chunks[2].prompt", "warning") in {(p.field, p.severity) for p in report.problems}
    zh = validate_gold(sample, "zh")
    assert {(p.where, p.field) for p in zh.errors} >= {(IDX, ""), (REG, "entities[3].kind")}
    text = zh.format()
    assert "error: spring/gold/chunk_index.json (line 1): not valid JSON" in text
    assert "field 'entities[3].kind'" in text


@pytest.mark.parametrize("lang", ["de", ""])
def test_unknown_language(lang):
    from vidmem.errors import UserInputError

    with pytest.raises(UserInputError, match="unknown gold language"):
        validate_gold(SPRING, lang)


def test_warnings_do_not_block(spring):
    ann, reg = spring.parent / ANN, spring.parent / REG
    data = read(ann)
    data["chunks"][0]["prompt"] = "   "
    data["chunks"][1]["scenario_tags"] = ["flashback"]
    data["chunks"][1]["gold_instructions"][0]["requirement"] = "recall"
    data["chunks"][1]["gold_instructions"].append({"entity_id": "char_002", "requirement": "continuity"})
    data["chunks"][2]["extra_field_of_a_new_release"] = {"kept": True}
    write(ann, data)
    registry = read(reg)
    registry["entities"].append({"entity_id": "prop_099", "kind": "prop", "name": "never seen",
                                 "description": "", "first_chunk": 99, "presence_spans": [],
                                 "state_events": [], "aliases": ["unknown field"]})
    write(reg, registry)
    report = validate_gold(spring)
    assert report.ok
    assert [(p.where, p.field) for p in report.warnings] == [
        (ANN, "chunks[1].gold_instructions[0].requirement"),
        (ANN, "chunks[1].gold_instructions[1].entity_id"),
        (REG, "entities[11].first_chunk"),
        (REG, "entities[11].entity_id"),
        (ANN, "chunks[0].prompt"),
        (ANN, "chunks[1].scenario_tags[0]"),
    ]
    assert "empty prompt" in report.warnings[4].message
