"""`workbench lab`, `make lab`: options reach JupyterLab; headless, it prints a tokened URL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyterlab_harness import free_port, lab_environment

from workbench.teaching import cli

ROOT = Path(__file__).resolve().parent.parent


def test_options_are_passed_on_to_jupyterlab(monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: ran.append(cmd) or 0)
    options = ["--port", "9000", "--no-browser", "--ServerApp.ip=0.0.0.0"]
    assert cli.main(["lab", "--source", "--lessons", str(tmp_path), *options]) == 0
    (cmd,) = ran
    assert cmd[1:4] == ["-m", "jupyterlab", f"--notebook-dir={tmp_path}"]
    assert {"--port=9000", "--no-browser", "--ServerApp.ip=0.0.0.0"} <= set(cmd)


def test_other_commands_refuse_unknown_options():
    with pytest.raises(SystemExit):
        cli.main(["render", "run.json", "--no-such-option"])


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_passes_args_to_workbench_lab():
    shown = subprocess.run(
        ["make", "-n", "lab", "ARGS=--port 9000 --no-browser"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "-m workbench lab --port 9000 --no-browser" in shown
    assert "[dev]" not in shown  # no test tools for a learner


def test_headless_lab_prints_a_url_with_a_token(tmp_path):
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "workbench.teaching.cli",
        "lab",
        "--lessons",
        str(ROOT / "lessons"),
    ]
    cmd += ["--no-browser", "--port", str(port), "--ServerApp.ip=127.0.0.1"]
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        lab = subprocess.Popen(
            cmd,
            env=lab_environment(tmp_path / "jupyter"),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # so that stopping it stops JupyterLab too
        )
    try:
        deadline = time.monotonic() + 90
        while f"127.0.0.1:{port}/lab?token=" not in log.read_text():
            assert lab.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()
    assert "open the URL with ?token=" in log.read_text()
