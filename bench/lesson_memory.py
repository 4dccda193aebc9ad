"""Peak memory of a kernel running each lesson: what a hub must give each learner.

Each lesson runs top to bottom in a fresh kernel (nbclient), as a learner's Run All
does; one extra cell at the end reads the kernel's peak resident set size
(``getrusage``: ``ru_maxrss``) and that of the biggest child it waited for (a
renderer). A kernel that only imports workbench is measured too, as the floor, and
so is the Jupyter server a learner's kernels run under (JupyterLab, idle, after
serving its page): on a hub, server and kernels share one memory limit.

    bash scripts/learner_env.sh        # the learners' Python, as the image installs it
    PYTHONPATH=. .tools/learner-env/bin/python bench/lesson_memory.py \
        > deploy/hub/lesson_memory.json

Run it with the learners' Python, not the project's .venv: the kernels then have what a
learner's server has. The .venv holds torch (for the tests), and a lesson that compares
with PyTorch where it is installed (lesson 8's kinks) then peaks at about 340 MiB instead
of 87 MiB.

prints JSON: per lesson its peak RSS and run time in seconds, the largest peaks, and the
server's RSS.
deploy/hub/values.yaml sizes the single-user memory guarantee and limit from it.
Linux (``ru_maxrss`` in KiB).
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbclient
import nbformat
import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))
# How lesson_memory.json was made: with the learners' Python (see above).
COMMAND = (
    "PYTHONPATH=. .tools/learner-env/bin/python bench/lesson_memory.py"
    " > deploy/hub/lesson_memory.json"
)

# The last cell: the kernel's own peak RSS and its largest waited-for child's, in MiB.
PEAK_CELL = """\
import json, resource
print(json.dumps({
    "kernel": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
}))
"""


def peak_of(notebook, folder: Path) -> dict:
    """Run ``notebook`` in a fresh kernel in ``folder``; its peak RSS (MiB) and run time."""
    notebook.cells.append(nbformat.v4.new_code_cell(PEAK_CELL))
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    printed = notebook.cells[-1].outputs[-1]["text"]
    peaks = json.loads(printed)
    return {
        "peak_rss_mib": round(peaks["kernel"], 1),
        "children_peak_rss_mib": round(peaks["children"], 1),
        "seconds": round(seconds, 1),
    }


def server_rss() -> float:
    """RSS (MiB) of an idle JupyterLab server on loopback, once it has served its page."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = secrets.token_hex(8)
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1"]
    command += [f"--port={port}", f"--IdentityProvider.token={token}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(
            command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                try:
                    requests.get(f"{url}/lab?token={token}", timeout=10).raise_for_status()
                    break
                except requests.ConnectionError:
                    time.sleep(0.5)
            requests.get(f"{url}/api/kernelspecs?token={token}", timeout=10).raise_for_status()
            return round(psutil.Process(server.pid).memory_info().rss / 2**20, 1)
        finally:
            server.terminate()
            server.wait(timeout=30)


def main() -> int:
    os.environ.setdefault("MPLBACKEND", "Agg")
    # The kernel imports this checkout's workbench, not whichever one is installed.
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    floor = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import workbench")])
    results = {"import workbench": peak_of(floor, ROOT)}
    for path in LESSONS:
        results[path.name] = peak_of(nbformat.read(path, as_version=4), path.parent)
        print(f"{path.name}: {results[path.name]}", file=sys.stderr, flush=True)
    report = {
        "command": COMMAND,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d"),
        "jupyter_server_rss_mib": server_rss(),
        "lessons": results,
        "max_peak_rss_mib": max(r["peak_rss_mib"] for r in results.values()),
        "max_children_peak_rss_mib": max(r["children_peak_rss_mib"] for r in results.values()),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
