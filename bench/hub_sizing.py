"""How many learners fit on a node, and how many nodes a class needs: from the measured peaks.

    .venv/bin/python bench/hub_sizing.py      # the Markdown table in deploy/hub/README.md

Kubernetes places a learner's server by what it *requests*: values.yaml's memory and
CPU guarantees. A node holds as many servers as its allocatable memory and CPU have
room for guarantees. Allocatable is what the node has less what the cloud keeps for
the system; the reserve here follows the usual managed-Kubernetes rule (GKE's,
similar on AKS and EKS): of memory, 25% of the first 4 GiB, 20% of the next 4, 10%
of the next 8, 6% of the rest up to 128 GiB, plus 100 MiB for eviction; of CPU, 6% of
the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest. Another
0.5 GiB and 0.2 CPU per node go to the chart's and the cluster's own pods (image
puller, logging). Check a real node with ``kubectl describe node``.

The measured peak of one learner (the server, the heaviest lesson's kernel and a
child: deploy/hub/lesson_memory.json) must fit in the guarantee, so that a node full
of learners all at their peak is still within its memory.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "deploy" / "hub"
NODES = ((4, 16), (8, 32), (16, 64))  # (vCPU, GiB): common general-purpose sizes
CLASSES = (40, 200)
PODS_RESERVE_GIB, PODS_RESERVE_CPU = 0.5, 0.2
UNITS_MIB = {"K": 2**-10, "M": 1, "G": 2**10, "T": 2**20}  # JupyterHub's: powers of two


def mib(quantity: str) -> float:
    """A JupyterHub memory size ("512M", "1G": powers of two) in MiB."""
    return float(quantity[:-1]) * UNITS_MIB[quantity[-1]]


def tiers(amount: float, steps: list[tuple[float, float]]) -> float:
    """``amount`` reserved by tiers: ``steps`` are (size of the tier, share of it)."""
    reserved, left = 0.0, amount
    for size, share in steps:
        part = min(left, size)
        reserved += part * share
        left -= part
    return reserved


def allocatable(cpus: int, gib: int) -> tuple[float, float]:
    """(CPU, MiB) a node of ``cpus`` and ``gib`` leaves to the learners' servers."""
    memory = gib - tiers(gib, [(4, 0.25), (4, 0.20), (8, 0.10), (112, 0.06)]) - 100 / 1024
    cpu = cpus - tiers(cpus, [(1, 0.06), (1, 0.01), (2, 0.005), (1e9, 0.0025)])
    return cpu - PODS_RESERVE_CPU, (memory - PODS_RESERVE_GIB) * 1024


def learner_peak_mib(measured: dict) -> float:
    server, kernel = measured["jupyter_server_rss_mib"], measured["max_peak_rss_mib"]
    return server + kernel + measured["max_children_peak_rss_mib"]


def sizing_table(measured: dict, values: dict) -> str:
    user = values["singleuser"]
    guarantee, cpu = mib(user["memory"]["guarantee"]), float(user["cpu"]["guarantee"])
    peak = learner_peak_mib(measured)
    lines = [
        f"One learner at the heaviest lesson's peak: {peak:.0f} MiB (server "
        f"{measured['jupyter_server_rss_mib']}, kernel {measured['max_peak_rss_mib']}, child "
        f"{measured['max_children_peak_rss_mib']}; measured {measured['date']}); guaranteed "
        f"{guarantee:.0f} MiB and {cpu:g} CPU.",
        "",
        "| node | allocatable | learners per node | nodes for 40 | nodes for 200 |",
        "|---|---|---|---|---|",
    ]
    for cpus, gib in NODES:
        free_cpu, free_mib = allocatable(cpus, gib)
        per_node = min(math.floor(free_mib / guarantee), math.floor(free_cpu / cpu))
        counts = [math.ceil(n / per_node) for n in CLASSES]
        lines.append(
            f"| {cpus} vCPU, {gib} GiB | {free_cpu:.2f} CPU, {free_mib / 1024:.1f} GiB "
            f"| {per_node} | {counts[0]} | {counts[1]} |"
        )
    return "\n".join(lines)


def main() -> int:
    measured = json.loads((HUB / "lesson_memory.json").read_text())
    values = yaml.safe_load((HUB / "values.yaml").read_text())
    print(sizing_table(measured, values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
