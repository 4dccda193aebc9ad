"""Start a private JupyterLab and drive it with Debian's Chromium through Playwright.

Used by the browser tests. Everything JupyterLab writes (runtime files, settings,
workspaces) goes to a temporary folder, the server listens on a free local port
with a random token, and :func:`running_lab` always shuts it down.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# The marks of a browser test: skipped only where Debian's Chromium is missing.
BROWSER_TEST = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin"),
]
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class Lab:
    url: str
    token: str
    process: subprocess.Popen

    def page_url(self, notebook: str, workspace: str = "") -> str:
        """The notebook's URL; in a ``workspace`` of its own, no other tab is restored."""
        where = f"workspaces/{workspace}/" if workspace else ""
        return f"{self.url}/lab/{where}tree/{notebook}?token={self.token}"


def shut_kernels_down(lab) -> None:
    """Stop every kernel the lab runs, so lessons do not pile up on a small machine."""
    headers = {"Authorization": f"token {lab.token}"}
    listing = urllib.request.Request(f"{lab.url}/api/kernels", headers=headers)
    with urllib.request.urlopen(listing, timeout=10) as answer:
        kernels = json.load(answer)
    for kernel in kernels:
        url = f"{lab.url}/api/kernels/{kernel['id']}"
        stop = urllib.request.Request(url, method="DELETE", headers=headers)
        urllib.request.urlopen(stop, timeout=30).close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(path: Path, cells: list[str], kernelspec: dict = KERNELSPEC) -> None:
    """A notebook of code cells, stored without outputs, using the python3 kernel (or another)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb.metadata["kernelspec"] = kernelspec
    nbformat.write(nb, path)


def _quiet_settings(config: Path) -> None:
    """No news or update checks (no internet here) and no pop-ups over the notebook."""
    folder = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    folder.mkdir(parents=True, exist_ok=True)
    settings = {"fetchNews": "false", "checkForUpdates": False}
    (folder / "notification.jupyterlab-settings").write_text(json.dumps(settings))


def lab_command(notebooks: Path, port: int, token: str, extra: tuple = ()) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={notebooks}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    return cmd + list(extra)


def lab_environment(home: Path) -> dict:
    """Private Jupyter folders; kernels import this checkout's ``workbench`` first."""
    env = dict(os.environ)
    for name, sub in [
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_DATA_DIR", "data"),
        ("IPYTHONDIR", "ipython"),
        ("MPLCONFIGDIR", "matplotlib"),
    ]:
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[name] = str(home / sub)
    _quiet_settings(home / "config")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _wait_until_ready(url: str, token: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer in 90 s:\n{log.read_text()[-3000:]}")


def shutdown(lab: Lab) -> None:
    """Ask the server to stop (it shuts its kernels down), then make sure it has."""
    request = urllib.request.Request(
        f"{lab.url}/api/shutdown", method="POST", headers={"Authorization": f"token {lab.token}"}
    )
    with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
        urllib.request.urlopen(request, timeout=5).close()
    try:
        lab.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        lab.process.terminate()
        try:
            lab.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            lab.process.kill()
            lab.process.wait()


@contextlib.contextmanager
def running_lab(notebooks: Path, home: Path, extra: tuple = ()) -> Iterator[Lab]:
    """JupyterLab serving ``notebooks`` until the ``with`` block ends (``extra``: more
    options for JupyterLab)."""
    port, token = free_port(), secrets.token_hex(16)
    home.mkdir(parents=True, exist_ok=True)
    log = home / "jupyterlab.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            lab_command(notebooks, port, token, extra),
            env=lab_environment(home),
            cwd=notebooks,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    lab = Lab(f"http://127.0.0.1:{port}", token, process)
    try:
        _wait_until_ready(lab.url, token, process, log)
        yield lab
    finally:
        shutdown(lab)


@contextlib.contextmanager
def chromium_page(profile: Path, width: int = 1500, height: int = 1100):
    """A Playwright page in headless Debian Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": width, "height": height},
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            yield page
        finally:
            context.close()


_ALL_RUN = (
    "() => { const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];"
    " return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }"
)
_ANY_STARTED = (
    "() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]"
    ".some(e => /\\[(\\d+|\\*)\\]/.test(e.textContent))"
)


def run_all_cells(
    page, lab: Lab, notebook: str, timeout_ms: int = 120_000, workspace: str = ""
) -> None:
    """Open ``notebook`` in JupyterLab, wait for its kernel, and run every cell."""
    open_notebook(page, lab, notebook, timeout_ms, workspace)
    click_run_all(page, timeout_ms)


def open_notebook(
    page, lab: Lab, notebook: str, timeout_ms: int = 120_000, workspace: str = ""
) -> None:
    """Open ``notebook`` in JupyterLab and wait until its kernel is idle."""
    page.goto(lab.page_url(notebook, workspace), timeout=timeout_ms)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout_ms)
    page.get_by_text(re.compile(r"\| Idle")).first.wait_for(timeout=timeout_ms)


def click_run_all(page, timeout_ms: int = 120_000) -> None:
    """Run every cell of the open notebook and wait until all have run.

    The Run menu is clicked again if no cell started (a click can land while the
    menu is still opening on a busy machine).
    """
    for _ in range(3):
        # the first cell's prompt: a click below a short notebook's cells adds a cell
        page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.locator(".lm-Menu [data-command='runmenu:run-all']").click()
        try:
            page.wait_for_function(_ANY_STARTED, timeout=15_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    page.wait_for_function(_ALL_RUN, timeout=timeout_ms)
