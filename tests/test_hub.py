"""A class on a real JupyterHub: three learners, each with a private copy of the lessons.

The hub is deploy/hub/local_hub_config.py (JupyterHub's DummyAuthenticator and
SimpleLocalProcessSpawner, configurable-http-proxy from npm in .tools/, installed by
scripts/install_proxy.sh). Three learners log in through the login form; each starts a
server through the hub's REST API with a token of their own, finds lesson 1 copied
into their home, and runs it in a kernel through the hub's proxy (the kernel's
websocket, as JupyterLab does). One learner's edit must reach neither another
learner's copy nor the course's, nor be overwritten when their server starts again.
Everything listens on 127.0.0.1; every process the hub started (proxy, servers,
kernels) works in the test's folder, and none may be left once the hub is stopped.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests
import websocket
import yaml

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "deploy" / "hub" / "local_hub_config.py"
PROXY = ROOT / ".tools" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
LESSON = "01_sigmoid_gradient.ipynb"
LEARNERS = ("ada", "grace", "edsger")
LOOPBACK = {"127.0.0.1", "::1"}
START_S = 90  # a hub and three servers on a busy two-core machine
CELL_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, seconds: float, what: str):
    """Poll ``check`` until it returns something true; fail with ``what`` past ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(0.3)
    pytest.fail(f"timed out after {seconds:g} s waiting for {what}")


@pytest.fixture(scope="module")
def proxy_installed():
    """configurable-http-proxy in .tools/ (scripts/install_proxy.sh); skip only without npm."""
    if not PROXY.exists():
        if shutil.which("npm") is None or shutil.which("node") is None:
            pytest.skip("node/npm not found: configurable-http-proxy cannot be installed")
        subprocess.run(["bash", str(ROOT / "scripts/install_proxy.sh")], check=True, timeout=300)
    return PROXY


class Hub:
    """A running JupyterHub: its URL, an admin token, and the folder its processes work in."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = os.environ | {
            "WORKBENCH_HUB_STATE": str(state),
            "WORKBENCH_HUB_PORT": str(self.port),
            "WORKBENCH_HUB_API_PORT": str(free_port()),
            "WORKBENCH_PROXY_API_PORT": str(free_port()),
            "WORKBENCH_HUB_API_TOKEN": self.token,
            # the learners' kernels import this checkout's workbench
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "MPLBACKEND": "Agg",
        }
        env.pop("PYTEST_CURRENT_TEST", None)
        self.log = open(state / "hub.log", "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
            cwd=state,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def api(self, method: str, path: str, token: str | None = None, **kw) -> requests.Response:
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, self.url + path, headers=headers, timeout=30, **kw)

    def up(self) -> bool:
        assert self.process.poll() is None, f"the hub exited:\n{self.log_tail()}"
        try:
            return self.api("GET", "/hub/api/").ok
        except requests.ConnectionError:
            return False

    def log_tail(self) -> str:
        return (self.state / "hub.log").read_text(errors="replace")[-4000:]

    def processes(self) -> list[psutil.Process]:
        """Every process working in the test's folder: the hub and all it started."""
        found = []
        for proc in psutil.process_iter(["cwd"]):
            cwd = proc.info.get("cwd") or ""
            if cwd == str(self.state) or cwd.startswith(str(self.state) + os.sep):
                found.append(proc)
        return found

    def stop(self) -> list[str]:
        """Stop the hub (it stops the servers and the proxy); kill and name any leftover."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        left = self.processes()
        if left:  # give exiting processes a moment, then kill what is really left
            _, left = psutil.wait_procs(left, timeout=5)
        names = [f"{p.pid}: {' '.join(p.cmdline())[:120]}" for p in left if p.is_running()]
        for proc in left:
            proc.kill()
        return names


class Learner:
    """One learner: logs in through the form, then uses the hub's API with their own token."""

    def __init__(self, hub: Hub, name: str) -> None:
        self.hub, self.name = hub, name
        self.token = ""

    def log_in(self) -> None:
        assert self.hub.api("GET", f"/hub/api/users/{self.name}").status_code == 404
        browser = requests.Session()
        browser.get(self.hub.url + "/hub/login", timeout=30).raise_for_status()
        form = {"username": self.name, "password": "any", "_xsrf": browser.cookies["_xsrf"]}
        reply = browser.post(
            self.hub.url + "/hub/login", data=form, allow_redirects=False, timeout=30
        )
        assert reply.status_code == 302, f"{self.name}: login refused ({reply.status_code})"
        assert "jupyterhub-hub-login" in browser.cookies, f"{self.name}: no login cookie"
        assert self.hub.api("GET", f"/hub/api/users/{self.name}").ok  # the hub knows them now
        made = self.hub.api("POST", f"/hub/api/users/{self.name}/tokens", json={"note": "test"})
        made.raise_for_status()
        self.token = made.json()["token"]

    def start_server(self) -> None:
        reply = self.hub.api("POST", f"/hub/api/users/{self.name}/server", token=self.token)
        assert reply.status_code in (201, 202), reply.text
        wait_for(self.server_ready, START_S, f"{self.name}'s server")

    def server_ready(self) -> bool:
        model = self.hub.api("GET", f"/hub/api/users/{self.name}").json()
        server = model.get("servers", {}).get("", {})
        return bool(server.get("ready"))

    def server(self, method: str, path: str, **kw) -> requests.Response:
        """A request to this learner's own server, through the hub's proxy."""
        return self.hub.api(method, f"/user/{self.name}/api/{path}", token=self.token, **kw)

    def lesson(self) -> dict:
        reply = self.server("GET", f"contents/lessons/{LESSON}?content=1")
        reply.raise_for_status()
        return reply.json()["content"]

    def run_lesson(self) -> list[str]:
        """Run every code cell of the learner's lesson 1 in a kernel; what each printed."""
        notebook = self.lesson()
        session = self.server(
            "POST",
            "sessions",
            json={"path": f"lessons/{LESSON}", "type": "notebook", "kernel": {"name": "python3"}},
        )
        session.raise_for_status()
        kernel_id = session.json()["kernel"]["id"]
        return [
            self.run_cell(kernel_id, "".join(cell["source"]), f"{self.name}: cell {k}")
            for k, cell in enumerate(notebook["cells"])
            if cell["cell_type"] == "code"
        ]

    def run_cell(self, kernel_id: str, code: str, where: str) -> str:
        """Run one cell on its own websocket, as a page that reconnects would.

        A websocket dropped between cells then costs nothing (a CI run once lost one
        mid-lesson, cause unknown); one dropped during a cell fails with the hub's log.
        """
        url = (
            f"ws://127.0.0.1:{self.hub.port}/user/{self.name}/api/kernels/{kernel_id}/channels"
            f"?session_id={uuid.uuid4().hex}"
        )
        channel = websocket.create_connection(
            url, header=[f"Authorization: token {self.token}"], timeout=CELL_S
        )
        try:
            return execute(channel, code, where)
        except websocket.WebSocketConnectionClosedException:
            pytest.fail(
                f"{where}: the kernel's websocket closed; the hub's log:\n{self.hub.log_tail()}"
            )
        finally:
            channel.close()


def execute(channel, code: str, where: str) -> str:
    """Send one execute_request on a kernel's websocket; wait until the kernel is idle."""
    msg_id = uuid.uuid4().hex
    header = {"msg_id": msg_id, "msg_type": "execute_request", "username": "test"}
    header |= {"session": uuid.uuid4().hex, "version": "5.3", "date": ""}
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}}
    content |= {"allow_stdin": False, "stop_on_error": True}
    request = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
    channel.send(json.dumps(request | {"channel": "shell", "buffers": []}))
    printed, replied, idle = [], None, False
    while replied is None or not idle:
        frame = channel.recv()
        if isinstance(frame, bytes):  # a message with binary buffers: a widget's, not ours
            continue
        message = json.loads(frame)
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, body = message["msg_type"], message["content"]
        if kind == "execute_reply":
            replied = body
        elif kind == "status":
            idle = body["execution_state"] == "idle"
        elif kind == "error":
            pytest.fail(f"{where} raised {body['ename']}: {body['evalue']}")
        elif kind == "stream":
            printed.append(body["text"])
    assert replied["status"] == "ok", f"{where}: {replied}"
    return "".join(printed)


def listening_addresses(procs: list[psutil.Process]) -> set[str]:
    """The addresses these processes listen on."""
    addresses = set()
    for proc in procs:
        try:
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    addresses.add(conn.laddr.ip)
        except psutil.NoSuchProcess:
            pass
    return addresses


def test_three_learners_on_a_hub(proxy_installed, tmp_path):
    state = tmp_path / "hub"
    state.mkdir()
    course_copy = (ROOT / "lessons" / LESSON).read_bytes()
    hub = Hub(state)
    try:
        wait_for(hub.up, START_S, "the hub")
        learners = [Learner(hub, name) for name in LEARNERS]
        for learner in learners:
            learner.log_in()
        with ThreadPoolExecutor(len(learners)) as pool:
            list(pool.map(Learner.start_server, learners))
            printed = dict(zip(LEARNERS, pool.map(Learner.run_lesson, learners)))

        # Lesson 1 ran whole for everyone: near its end the checker catches a rule that
        # forgot the upstream gradient.
        for name in LEARNERS:
            assert any("Multiply it by ȳ" in text for text in printed[name]), printed[name]
        # Private copies: each learner's lesson is a file in their own home.
        for name in LEARNERS:
            copy = state / "home" / name / "lessons" / LESSON
            assert copy.read_bytes() == course_copy
        # A learner's server is theirs alone: another's token is refused.
        ada, grace, edsger = learners
        assert (
            ada.hub.api(
                "GET", f"/user/grace/api/contents/lessons/{LESSON}", token=ada.token
            ).status_code
            == 403
        )

        # Ada edits her lesson; nobody else's copy, nor the course's, changes.
        notebook = ada.lesson()
        notebook["cells"].insert(0, {"cell_type": "markdown", "metadata": {}, "source": "ada's"})
        model = {"type": "notebook", "format": "json", "content": notebook}
        ada.server("PUT", f"contents/lessons/{LESSON}", json=model).raise_for_status()
        assert ada.lesson()["cells"][0]["source"] == "ada's"
        for other in (grace, edsger):
            assert other.lesson()["cells"][0]["source"] != "ada's"
            assert (state / "home" / other.name / "lessons" / LESSON).read_bytes() == course_copy
        assert (ROOT / "lessons" / LESSON).read_bytes() == course_copy
        # Her edit survives her server's next start: the copy is made only once.
        home = state / "home" / "ada"
        rerun = ["bash", "-c", '. "$0"', str(ROOT / "deploy/hub/copy-lessons.sh")]
        env = {"HOME": str(home), "PATH": os.environ["PATH"]}
        env["WORKBENCH_LESSONS_SRC"] = str(ROOT / "lessons")
        subprocess.run(rerun, env=env, check=True, timeout=30)
        assert ada.lesson()["cells"][0]["source"] == "ada's"

        # Loopback only: nothing the hub started listens on another address.
        assert listening_addresses(hub.processes()) <= LOOPBACK
        assert len(hub.processes()) >= 1 + 1 + 3 + 2  # hub, proxy, servers, kernels at least
    finally:
        leftovers = hub.stop()
    assert leftovers == [], f"still running after the hub stopped: {leftovers}"


def quantity_mib(text: str) -> float:
    """A Kubernetes memory quantity ("512M", "1G", "1Gi") in MiB."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 1e3, "M": 1e6, "G": 1e9}
    for suffix in sorted(units, key=len, reverse=True):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * units[suffix] / 2**20
    return float(text) / 2**20


def test_values_size_memory_from_the_measured_lessons():
    """values.yaml's guarantee holds one lesson at its peak, its limit four (lesson_memory.json)."""
    values = yaml.safe_load((ROOT / "deploy/hub/values.yaml").read_text())
    measured = json.loads((ROOT / "deploy/hub/lesson_memory.json").read_text())
    lessons = {name for name in measured["lessons"] if name.endswith(".ipynb")}
    assert lessons == {path.name for path in (ROOT / "lessons").glob("*.ipynb")}, (
        "re-measure: PYTHONPATH=. python bench/lesson_memory.py > deploy/hub/lesson_memory.json"
    )
    server, kernel = measured["jupyter_server_rss_mib"], measured["max_peak_rss_mib"]
    renderer = measured["max_children_peak_rss_mib"]
    memory = values["singleuser"]["memory"]
    assert quantity_mib(memory["guarantee"]) >= server + kernel + renderer
    assert quantity_mib(memory["limit"]) >= server + 4 * kernel + renderer
    assert values["cull"]["enabled"] and values["cull"]["timeout"] > 0
    # The exchange volume is mounted where nbgrader's config says the exchange is.
    mounts = values["singleuser"]["storage"]["extraVolumeMounts"]
    config = values["singleuser"]["extraFiles"]["nbgrader-config"]["stringData"]
    exchange = [m["mountPath"] for m in mounts if m["name"] == "nbgrader-exchange"]
    assert exchange and f'c.Exchange.root = "{exchange[0]}"' in config


def test_image_base_is_pinned_by_date():
    base = next(
        line.split()[1]
        for line in (ROOT / "deploy/hub/Dockerfile").read_text().splitlines()
        if line.startswith("FROM ")
    )
    name, _, tag = base.rpartition(":")
    assert name.startswith("quay.io/jupyter/") and len(tag) == 10 and tag[4] == tag[7] == "-"
