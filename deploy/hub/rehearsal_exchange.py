"""The rehearsal's nbgrader exchange, made as the cluster makes it.

On the cluster, values.yaml's init container ``nbgrader-exchange`` runs as root before
each server starts and makes the exchange's folders (the top one closed to learners, the
course's made before any learner can make it). Here its own script runs, as root, on
this machine's folder instead of the volume: local_hub_config.py at the hub's start,
tests/test_hub_exchange.py on a folder of its own.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

INIT_CONTAINER = "nbgrader-exchange"


def make_exchange(exchange: Path, values: dict) -> None:
    """Run values.yaml's (``values``) exchange script on the folder ``exchange``, where the
    cluster runs it on the volume's mount point."""
    containers = values["singleuser"]["initContainers"]
    (init,) = [container for container in containers if container["name"] == INIT_CONTAINER]
    (mount,) = [volume["mountPath"] for volume in init["volumeMounts"]]
    exchange.mkdir(parents=True, exist_ok=True)
    command = [str(exchange) if part == mount else part for part in init["command"]]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(
            f"values.yaml's {INIT_CONTAINER} script failed on {exchange} (it must run as "
            f"root, as on the cluster):\n{done.stdout}{done.stderr}"
        )
