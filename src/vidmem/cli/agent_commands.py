"""`vidmem agent m3 --task TASK.json ...`: run the M3-Agent loop on one task.

Parsing and printing only; the loop is :class:`vidmem.agents.m3.M3Agent`, the task file
:mod:`vidmem.agents.m3_task`. Writes ``OUT/agent_run.json`` (the whole chain, every
rejected rewrite included) and the clips and last frames of every try under ``OUT``.
Exit code 0 when every try worked; 1 (after writing the log) when a generation,
diagnosis, rewriter call or score failed; 2 for bad input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from vidmem.cli.common import JsonOpt, QuietOpt, console, print_json
from vidmem.errors import RunFailedError, UserInputError

__all__ = ["agent_app"]

agent_app = typer.Typer(help="Agents that drive a generator (M3-Agent).", no_args_is_help=True)

EVIDENCE_SCORER = "judge-evidence"


def _backend_options(flag: str, name: str, pairs: Sequence[str] | None) -> dict[str, Any]:
    """``--<flag>-opt key=value`` pairs; numbers, bools and null are typed."""
    from vidmem.benchmarks.options import parse_backend_option

    options: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair or not pair.partition("=")[0].strip():
            raise UserInputError(f"--{flag}-opt {pair!r} is not key=value",
                                 hint=f"e.g. --{flag}-opt base_url=http://127.0.0.1:8000/v1")
        _, key, value = parse_backend_option(f"{name}:{pair.strip()}")
        options[key.strip()] = value
    return options


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _short(text: str | None, n: int = 90) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _print_chain(run: Any, out_dir: Path) -> None:
    table = Table(title=f"M3-Agent chain ({run.stopped}; {run.generator_calls} generated)",
                  title_justify="left", show_lines=True)
    for col in ("try", "instruction", "diagnosis", "rewrite", "score", "best-of-k"):
        table.add_column(col, overflow="fold", no_wrap=col == "try")
    for step, best in zip(run.steps, run.running_best, strict=True):
        d = step.diagnosis or {}
        if d.get("status") == "ok":
            diagnosis = f"{d['failure_mode']}: {_short(d.get('evidence'), 60)}"
        else:
            diagnosis = f"({d.get('status', 'not asked')}) {_short(d.get('error') or step.error, 60)}"
        r = step.rewrite
        if r is None:
            rewrite = "-"
        else:
            rejected = len(r.get("rejected", []))
            rewrite = {"ok": f"-> {_short(r['new'], 70)}", "rejected": "kept (all rejected)",
                       "skipped": "kept (no diagnosis)"}.get(r["status"], r["status"])
            rewrite += f" ({rejected} rejected)" if rejected else ""
        mark = " *" if step.try_index == run.best else ""
        table.add_row(f"{step.try_index}{mark}", escape(_short(step.instruction)),
                      escape(diagnosis), escape(rewrite),
                      "-" if step.score is None else f"{step.score:.3f}",
                      "-" if best is None else f"{best:.3f}")
    console.print(table)
    kept = run.best_step
    console.print(
        f"kept: try {run.best} ({kept.clip if kept else '-'}), score "
        f"{'-' if kept is None or kept.score is None else f'{kept.score:.3f}'}; keep-best uses "
        "the --score scorer, so with the scorer that reports the result it is an oracle "
        f"estimate. log: {out_dir / 'agent_run.json'}", highlight=False, soft_wrap=True)


@agent_app.command("m3")
def m3(
    task: Annotated[Path, typer.Option("--task", help="Task file (JSON): task_record, instruction, request, scene.")],
    generator: Annotated[str, typer.Option("--generator", help="Generator name or package.module:Class.")],
    diagnoser: Annotated[str, typer.Option("--diagnoser", help="Judge backend that names the failure mode.")],
    rewriter: Annotated[str, typer.Option("--rewriter", help="Rewriter backend (e.g. rewriter/openai).")],
    score: Annotated[str, typer.Option("--score", help="module:function (clip path -> float) or judge-evidence.")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for agent_run.json and the clips.")],
    k: Annotated[int, typer.Option("-k", "--k", min=1, help="Candidates, the original included.")] = 5,
    max_rejects: Annotated[int, typer.Option("--max-rejects", min=0, help="Retries of a rejected rewrite per try.")] = 3,
    seed: Annotated[int, typer.Option("--seed", help="Added to every try's generation seed.")] = 0,
    withhold_target: Annotated[bool | None, typer.Option("--withhold-target/--name-target", help="Forbid rewrites to state the target (default: the task file's).")] = None,
    generator_opt: Annotated[list[str] | None, typer.Option("--generator-opt", help="key=value for the generator.")] = None,
    diagnoser_opt: Annotated[list[str] | None, typer.Option("--diagnoser-opt", help="key=value for the diagnoser.")] = None,
    rewriter_opt: Annotated[list[str] | None, typer.Option("--rewriter-opt", help="key=value for the rewriter.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an earlier agent_run.json in --out.")] = False,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Diagnose the last frame, rewrite the failed move, regenerate; keep the best of K."""
    from vidmem.agents.m3 import M3Agent, evidence_scorer
    from vidmem.agents.m3_task import load_scorer, load_task
    from vidmem.generators.loading import load_generator, parse_options
    from vidmem.models.loading import load_backend

    spec = load_task(task)
    log_path = out_dir / "agent_run.json"
    if log_path.exists() and not overwrite:
        raise UserInputError(f"{log_path} exists already",
                             hint="choose another --out, or pass --overwrite")
    gen = load_generator(generator, parse_options(generator_opt))
    judge = load_backend(diagnoser, _backend_options("diagnoser", diagnoser, diagnoser_opt),
                         role="judge")
    rewrite = load_backend(rewriter, _backend_options("rewriter", rewriter, rewriter_opt),
                           role="rewriter")
    scorer = (evidence_scorer(judge, spec.record, spec.instruction, spec.scene,
                              frames_dir=out_dir) if score == EVIDENCE_SCORER
              else load_scorer(score))
    withheld = spec.withhold_target if withhold_target is None else withhold_target
    agent = M3Agent(gen, diagnoser=judge, rewriter=rewrite, k=k, max_rejects=max_rejects,
                    seed=seed)
    run = agent.run(spec.record, spec.request, scorer, out_dir, spec.scene,
                    withhold_target=withheld)
    data = run.to_dict()
    data["scorer"] = score
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_json(log_path, data)
    if as_json:
        print_json(data)
    elif not quiet:
        _print_chain(run, out_dir)
    failures = run.failures()
    if failures:
        raise RunFailedError(
            f"M3-Agent: {len(failures)} problem(s) in {log_path}: " + "; ".join(failures[:5]),
            hint="every try is logged there; fix the backend or generator named and rerun "
                 "with --overwrite")
