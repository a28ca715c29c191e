"""A toy post-scoring analysis: the worst-scoring item and its distance to the mean."""

from __future__ import annotations

PROTOCOL = {"worst": {"rule": "lowest score; ties: the first in scores.jsonl order"}}


def run(run, options):
    if options.opts.get("fail") == "1":
        raise ValueError("toy analysis asked to fail")
    rows = [r for r in run.scores() if r["score"] is not None]
    worst = min(rows, key=lambda r: r["score"])
    mean = sum(r["score"] for r in rows) / len(rows)
    return {"worst": worst["id"], "score": worst["score"], "below_mean": mean - worst["score"]}


def report(rep, data, run):
    from vidmem.report import Table

    rep.section("worst item (analysis)").add(
        Table(["id", "score", "below mean"], [[data["worst"], data["score"], data["below_mean"]]]))
