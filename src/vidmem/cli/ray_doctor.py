"""The ``vidmem doctor --executor ray`` tables: the cluster, then what each node can load."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def print_cluster(out: Console, ray: Mapping[str, Any]) -> None:
    """Render :func:`vidmem.runners.ray_session.cluster_report`."""
    out.print(f"ray {ray['ray_version']} ({escape(str(ray['address']))}): "
              f"{len(ray['nodes'])} nodes, {ray['cpus']:g} CPUs, {ray['gpus']:g} GPUs",
              highlight=False)
    nodes = Table(title="ray nodes", title_justify="left")
    for col in ("node", "alive", "CPUs", "GPUs", "vidmem", "backends that load"):
        nodes.add_column(col)
    for node in ray["nodes"]:
        backends = node.get("backends") or []
        loads = [b for b in backends if b["importable"] and not str(b["weights"]).startswith(
            "not found")]
        missing = [b["name"] for b in backends if b not in loads and b.get("problem") !=
                   "planned, not implemented yet"]
        detail = (f"{len(loads)} of {len(backends)}"
                  + (f" (not: {', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''})"
                     if missing else "")) if backends else escape(node.get("problem", "-"))
        nodes.add_row(str(node["node_ip"]), "yes" if node["alive"] else "[red]no[/red]",
                      f"{node['cpus']:g}", f"{node['gpus']:g}",
                      str(node.get("vidmem_version", "-")), detail)
    out.print(nodes)
