"""Attribution on a sim rollout that produces synthesis failures: the sim generator with
`ignore_references=0.5` ignores half the references that show a name (truth source
`reference_ignored`), and the attribution analysis calls those misses `synthesis`."""

from __future__ import annotations

import json
from collections import Counter

import pytest

#: the share of reference-shown names the generator ignores
P = 0.5


@pytest.fixture(scope="module")
def synthesis_run(track_b_world, tmp_path_factory):
    """The shared world's 1-story gold run with memory none (every recalled name comes
    from a reference or is an impostor, so each reference the generator ignores is a
    failure of its own) and ``ignore_references=P``, copied and analysed."""
    from vidmem.cli import main

    sim = track_b_world.run("none", ("seg_uniform",), ignore_references=str(P))
    base = tmp_path_factory.mktemp("attribution_synthesis")
    run = track_b_world.copy(sim.run, base / "run")
    cache = track_b_world.cache_copy(base / "answers.sqlite")
    try:
        main(["analyze", "vmem_track_b", str(run), "--only", "attribution",
              "--judge-cache", str(cache), "--quiet"])
    except SystemExit as exc:
        assert not exc.code, exc.code
    data = json.loads((run / "analyses" / "attribution.json").read_text("utf-8"))
    return base, sim.gold, data


@pytest.mark.slow  # 14 sim clips generated and judged, references judged (~40 s here)
def test_ignored_references_are_attributed_to_synthesis(synthesis_run,
                                                         sim_attribution_truth):
    from vidmem.benchmarks.vmem_track_b.stories import load_stories

    base, gold, data = synthesis_run
    res = data["result"]
    (story,) = load_stories(gold)
    assert res["references_unknown"] == [] and res["unjudged_references"] == 0
    seen: Counter = Counter()
    agree = total = 0
    for u in res["units"]:
        want, source = sim_attribution_truth(base / "run", story, u)
        seen[(u["failure"], u["cause"], want, source)] += 1
        if want is not None:
            total += 1
            agree += want == u["cause"]
    print("attribution vs sim truth:", agree, "/", total, dict(seen))
    ignored = {k: n for k, n in seen.items() if k[3] == "reference_ignored" and k[2] == "synthesis"}
    # every ignored reference after a right previous appearance is called synthesis
    assert sum(ignored.values()) >= 3 and {k[1] for k in ignored} == {"synthesis"}, seen
    # the synthesis units name the references that showed the entity
    for u in res["units"]:
        if u["cause"] == "synthesis":
            assert u["shown_by"] and u["shown_refs"], u
    # measured: 17 of 20 (every miss; three renders the card judge saw that were not drawn)
    assert total >= 10 and agree / total >= 0.75, (agree, total, seen)
    misses = [(k, n) for k, n in seen.items() if k[0] == "miss" and k[2] is not None]
    assert sum(n for k, n in misses if k[1] == k[2]) / sum(n for _, n in misses) >= 0.9, seen
    synthesis = res["shares"]["miss"]["seg_uniform"]["synthesis"]
    n_miss = sum(u["failure"] == "miss" for u in res["units"])
    assert synthesis["n"] == sum(u["cause"] == "synthesis" for u in res["units"])
    assert synthesis["units"] == n_miss and synthesis["share"] == synthesis["n"] / n_miss
    assert "Failure attribution (analysis)" in (base / "run" / "report" / "report.md").read_text()
