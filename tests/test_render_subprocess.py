"""Static export (``.svg()``, ``.png()``, ``workbench render``) runs the renderer in a child.

A system ``dot`` or a pygraphviz child process: its stderr never reaches the notebook,
a graph too big to lay out is killed after a time limit, and with no renderer the
message names what to install. Hanging or noisy renderers are simulated by a fake
``dot`` script on PATH, or a fake ``pygraphviz`` package on the child's PYTHONPATH.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import workbench as wb
from workbench.core import events
from workbench.teaching.cli import main
from workbench.viz import renderers

ROOT = Path(__file__).resolve().parent.parent
SMALL_DOT = "digraph g { a -> b }\n"
FONTCONFIG_NOISE = (
    'Fontconfig warning: "/usr/share/fontconfig/conf.avail/05-reset-dirs-sample.conf", '
    'line 6: unknown element "reset-dirs"'
)


def small_loss():
    events.reset_ids()
    a = wb.tensor([1.0, 2.0], requires_grad=True, name="a")
    return (a * a).sum()


def fake_dot(folder: Path, body: str) -> None:
    """A ``dot`` program on PATH (and nothing else there) that runs ``body`` in sh."""
    script = folder / "dot"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


# A `dot` that starts a process of its own and waits for it: both must be killed.
HANGING_SHELL = (
    "echo $$ > {folder}/shell.pid\n/bin/sleep 60 &\necho $! > {folder}/sleep.pid\nwait\n"
)


def fake_pygraphviz(folder: Path, body: str) -> Path:
    """A ``pygraphviz`` package that the pygraphviz child imports instead of the real one."""
    package = folder / "fake_site" / "pygraphviz"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body)
    return package.parent


@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    """PATH holds no ``dot``: the pygraphviz child draws."""
    empty = tmp_path / "empty_bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("WORKBENCH_RENDERER", raising=False)
    return empty


def is_running(pid: int) -> bool:
    """Is ``pid`` a live process? A zombie (dead, not yet reaped by init) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:  # no /proc here (macOS), or it has just gone: ask again
        return True
    return state != "Z"


def gone_soon(pid: int, within_s: float = 3.0) -> bool:
    """A killed orphan is reaped by init a moment later: wait a little for it."""
    deadline = time.monotonic() + within_s
    while is_running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# ------------------------------------------------------------ it draws
def test_render_returns_svg_and_png_bytes_within_a_time_limit():
    svg = renderers.render(SMALL_DOT, "svg", timeout=60)
    assert b"<svg" in svg and b"</svg>" in svg
    assert renderers.render(SMALL_DOT, "png", timeout=60).startswith(b"\x89PNG\r\n\x1a\n")
    graph = wb.viz.draw(small_loss())
    assert graph.svg(timeout=60).count("<svg") == 1
    assert graph.png(timeout=60).startswith(b"\x89PNG")


def test_the_pygraphviz_renderer_runs_in_a_child_process(tmp_path):
    """The notebook's process never imports pygraphviz, so nothing of it can block or print."""
    code = (
        "import sys, workbench as wb\n"
        "from workbench.viz import renderers\n"
        "assert renderers.which_renderer() == 'pygraphviz', renderers.which_renderer()\n"
        "a = wb.tensor([1.0, 2.0], requires_grad=True)\n"
        "graph = wb.viz.draw((a * a).sum())\n"
        "print('<svg' in graph.svg(), graph.png()[:4] == b'\\x89PNG')\n"
        "print('pygraphviz' in sys.modules)\n"
    )
    env = dict(os.environ, PATH=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("WORKBENCH_RENDERER", None)
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["True True", "False"]
    assert out.stderr == ""


# ------------------------------------------------------------- quiet
def test_renderer_noise_stays_off_stderr_but_is_logged(monkeypatch, tmp_path, capfd, caplog):
    fake_dot(
        tmp_path,
        f"echo '{FONTCONFIG_NOISE}' >&2\n/bin/cat > /dev/null\necho '<svg><g id=\"x\"/></svg>'\n",
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    with caplog.at_level(logging.DEBUG, logger=renderers.__name__):
        svg = renderers.render(SMALL_DOT, "svg")
    assert svg == b'<svg><g id="x"/></svg>\n'
    assert capfd.readouterr().err == ""
    assert FONTCONFIG_NOISE in caplog.text  # kept for whoever turns DEBUG logging on


def test_graphviz_warnings_from_pygraphviz_stay_off_stderr(no_dot, capfd, caplog):
    with caplog.at_level(logging.DEBUG, logger=renderers.__name__):
        svg = renderers.render('digraph g { a [shape="no-such-shape"] }', "svg")
    assert b"<svg" in svg
    assert capfd.readouterr().err == ""
    assert "unknown shape no-such-shape" in caplog.text


# ---------------------------------------------------------- failures
def test_a_failing_dot_reports_its_error_line_not_its_warnings(monkeypatch, tmp_path):
    fake_dot(
        tmp_path,
        f"echo '{FONTCONFIG_NOISE}' >&2\n"
        "echo \"Error: <stdin>: syntax error in line 3 near '->'\" >&2\nexit 1\n",
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(wb.viz.RenderError, match="syntax error in line 3") as caught:
        renderers.render(SMALL_DOT, "svg")
    assert "Fontconfig" not in str(caught.value)
    assert isinstance(caught.value, RuntimeError)
    assert FONTCONFIG_NOISE in caught.value.stderr  # all of it, for debugging


def test_pygraphviz_rejecting_the_dot_is_a_runtime_error_with_graphviz_reason(no_dot, capfd):
    with pytest.raises(RuntimeError, match="pygraphviz failed .*syntax error in line 1"):
        renderers.render("digraph g { a -> }", "svg")
    assert capfd.readouterr().err == ""


# ----------------------------------------------------------- timeouts
def test_a_hanging_dot_is_killed_with_everything_it_started(monkeypatch, tmp_path):
    fake_dot(tmp_path, HANGING_SHELL.format(folder=tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    started = time.monotonic()
    with pytest.raises(wb.viz.RenderTimeout, match="took longer than 0.5 s") as caught:
        renderers.render(SMALL_DOT, "svg", timeout=0.5)
    assert time.monotonic() - started < 3.5
    message = str(caught.value)
    assert "too big to lay out" in message and "fold_limit=" in message
    for name in ("shell.pid", "sleep.pid"):
        assert gone_soon(int((tmp_path / name).read_text())), f"{name} still running"


def test_interrupting_the_kernel_kills_the_renderer(monkeypatch, tmp_path):
    """Jupyter's Interrupt is a KeyboardInterrupt in the kernel: the layout child dies too.

    SIGUSR1 with a handler that raises KeyboardInterrupt stands in for SIGINT, so that
    a signal arriving late could never stop the whole test run.
    """
    fake_dot(tmp_path, HANGING_SHELL.format(folder=tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, interrupt)
    timer = threading.Timer(0.5, signal.pthread_kill, (threading.get_ident(), signal.SIGUSR1))
    started = time.monotonic()
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            renderers.render(SMALL_DOT, "svg", timeout=30)
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)
    assert time.monotonic() - started < 3.5
    for name in ("shell.pid", "sleep.pid"):
        assert gone_soon(int((tmp_path / name).read_text())), f"{name} still running"


def test_a_hanging_pygraphviz_child_is_killed(monkeypatch, no_dot, tmp_path):
    pid_file = tmp_path / "child.pid"
    site = fake_pygraphviz(
        tmp_path,
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n",
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    started = time.monotonic()
    with pytest.raises(wb.viz.RenderTimeout, match="too big to lay out"):
        renderers.render(SMALL_DOT, "svg", timeout=3)
    assert time.monotonic() - started < 6
    assert gone_soon(int(pid_file.read_text()))


def test_the_default_time_limit_applies_to_svg(monkeypatch, no_dot, tmp_path):
    site = fake_pygraphviz(tmp_path, "import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setattr(renderers, "TIMEOUT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="took longer than 0.5 s"):
        wb.viz.draw(small_loss()).svg()
    assert time.monotonic() - started < 3.5


# ------------------------------------------------------- no renderer
def test_no_renderer_names_the_render_extra_and_graphviz(monkeypatch, no_dot):
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # cannot be found
    with pytest.raises(wb.viz.RendererMissing) as caught:
        wb.viz.draw(small_loss()).svg()
    message = str(caught.value)
    assert "pip install 'autodiff-workbench[render]'" in message
    assert "install Graphviz so that `dot` is on PATH" in message


def test_a_pygraphviz_that_cannot_be_imported_is_a_missing_renderer(monkeypatch, no_dot, tmp_path):
    site = fake_pygraphviz(tmp_path, "raise ImportError('libcgraph.so.6: cannot open')\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    with pytest.raises(wb.viz.RendererMissing, match="libcgraph") as caught:
        renderers.render(SMALL_DOT, "svg")
    assert "autodiff-workbench[render]" in str(caught.value)


# --------------------------------------------------------------- CLI
@pytest.fixture
def trace_file(tmp_path):
    with wb.trace() as tr:
        small_loss().backward()
    return tr.save(tmp_path / "run.json")


def test_cli_timeout_is_one_line_and_exit_2(monkeypatch, tmp_path, trace_file, capsys):
    fake_dot(tmp_path, "/bin/sleep 60\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["render", str(trace_file), "--timeout", "0.5", "-o", str(tmp_path / "o.svg")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("workbench render: dot took longer than 0.5 s")
    assert err.count("\n") == 1 and "--fold-limit" in err


def test_cli_renderer_failure_is_one_line_and_exit_2(monkeypatch, tmp_path, trace_file, capsys):
    fake_dot(tmp_path, f"echo '{FONTCONFIG_NOISE}' >&2\necho 'Error: out of memory' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["render", str(trace_file), "-o", str(tmp_path / "o.png")]) == 2
    err = capsys.readouterr().err
    assert err == "workbench render: dot failed (exit 1): Error: out of memory\n"


def test_cli_without_a_renderer_names_the_extra(monkeypatch, no_dot, trace_file, capsys):
    monkeypatch.setitem(sys.modules, "pygraphviz", None)
    assert main(["render", str(trace_file)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("workbench render: cannot render")
    assert "autodiff-workbench[render]" in err and err.count("\n") == 1


# ----------------------------------------------------------- widgets
def test_a_hanging_renderer_cannot_stall_a_widget(monkeypatch, no_dot, tmp_path):
    """Widgets send DOT to the browser: they never start the (here hanging) renderer."""
    site = fake_pygraphviz(tmp_path, "import time\ntime.sleep(60)\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    started = time.monotonic()
    stepper = wb.widgets.BackwardStepper(small_loss())
    live = wb.widgets.LiveGraph(auto=False)
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).exp()
    live.refresh()
    live.stop()
    assert time.monotonic() - started < 30  # the fake renderer would sleep 60 s
    assert stepper.error is None and stepper.graph.dot.startswith("digraph")
    assert live.view.dot.startswith("digraph") and "ops recorded" in live.status.value
