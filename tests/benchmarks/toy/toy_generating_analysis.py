"""A toy analysis that says it generates: run only when named."""

from __future__ import annotations

GENERATES = True


def run(run, options):
    return {"ran": True}


def report(rep, data, run):
    from vidmem.report import Table

    rep.section("generating analysis").add(Table(["ran"], [[data["ran"]]]))
