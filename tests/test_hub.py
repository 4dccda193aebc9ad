"""A graded class on a real JupyterHub: the local rehearsal of deploy/hub/, whole.

The hub is deploy/hub/local_hub_config.py: each user's server runs under its own user
id (values.yaml's own hook), with the learners' Python and settings of the image
(.tools/learner-env, scripts/learner_env.sh), the learners' copies of the lessons and
nbgrader's exchange on a shared folder. The test walks the teacher's path of
docs/teaching.md with the fake class of tests/nbgrader_class.py:

1. the teacher logs in: their server has formgrader; they make the course directory
   (``workbench course``), import the roster, generate and release lesson 1;
2. three learners log in (no formgrader for them), fetch lesson 1 from the Assignments
   API, answer it (ada right, grace with two classic mistakes, edsger cheating: the
   engine's own rule, then a cell that replaces the checker) and submit;
3. a learner's kernel fails to list the exchange's inbox, to read, change, rename or
   delete another learner's submission, even knowing where it is, and to make a
   course's or an assignment's folder in the exchange;
4. grace forges, from her kernel: submissions of her own holding a symbolic link to the
   teacher's source notebook, a hard link, a named pipe, a socket; one in ada's name
   dated 2099; ``nbgrader submit --student=ada`` and with ``JUPYTERHUB_USER=ada``;
5. the teacher collects (each forgery skipped and named, ada's and grace's real
   submissions collected), autogrades (edsger's engine rule refused, his disarmed
   checker scores 0 and is flagged), generates and releases feedback, and runs the
   class report;
6. each learner fetches their own feedback, and only theirs.

Nothing a learner can reach here holds a solution: their home, the lessons copied
into it, the released assignment, their Python. Everything listens on 127.0.0.1, and
once the hub is stopped no process it started (proxy, servers, kernels) is left.
Switching user ids needs root: elsewhere the test skips, saying so.
"""

from __future__ import annotations

import datetime
import html
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import requests
import websocket
import yaml
from nbgrader.api import Gradebook
from nbgrader_class import (
    ANSWERS,
    ASSIGNMENT,
    CHEATS,
    LESSON,
    ROSTER,
    SUBMITTERS,
    answered,
    check_lesson_one_report,
)

from workbench.teaching import course
from workbench.teaching.classroom import class_report as report
from workbench.teaching.classroom.coursedir import COURSE_ID

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parent.parent
HUB_DIR = ROOT / "deploy" / "hub"
# The class's settings for every server (values.yaml's singleuser.extraEnv).
VALUES_ENV = yaml.safe_load((HUB_DIR / "values.yaml").read_text())["singleuser"]["extraEnv"]
CONFIG = HUB_DIR / "local_hub_config.py"
PROXY = ROOT / ".tools" / "chp" / "node_modules" / ".bin" / "configurable-http-proxy"
LEARNER_PYTHON = ROOT / ".tools" / "learner-env" / "bin" / "python"
TEACHER = "teacher"
LOOPBACK = {"127.0.0.1", "::1"}
START_S = 120  # a hub and four servers on a busy two-core machine
CELL_S = 600  # the longest command: nbgrader autograde of three notebooks


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
def rehearsal_tools():
    """The proxy (npm) and the learners' Python (PyPI): both installed by the project."""
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        pytest.skip("the rehearsal runs each learner under their own user id: it needs root")
    if not PROXY.exists():
        if shutil.which("npm") is None or shutil.which("node") is None:
            pytest.skip("node/npm not found: configurable-http-proxy cannot be installed")
        subprocess.run(["bash", str(ROOT / "scripts/install_proxy.sh")], check=True, timeout=300)
    env = os.environ | {"WORKBENCH_BUILD_PYTHON": sys.executable}
    subprocess.run(["bash", str(ROOT / "scripts/learner_env.sh")], check=True, timeout=900, env=env)
    assert LEARNER_PYTHON.exists()


class Hub:
    """A running JupyterHub: its URL, an admin token, and the folder its processes work in."""

    def __init__(self, state: Path) -> None:
        self.state = state
        self.token = secrets.token_hex(16)
        self.password = secrets.token_urlsafe(12)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = os.environ | {
            "WORKBENCH_HUB_STATE": str(state),
            "WORKBENCH_HUB_PORT": str(self.port),
            "WORKBENCH_HUB_API_PORT": str(free_port()),
            "WORKBENCH_PROXY_API_PORT": str(free_port()),
            "WORKBENCH_HUB_API_TOKEN": self.token,
            "WORKBENCH_HUB_PASSWORD": self.password,
            "WORKBENCH_ROSTER": str(HUB_DIR / "roster-example.csv"),
            "WORKBENCH_INSTRUCTORS": TEACHER,
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
        return requests.request(method, self.url + path, headers=headers, timeout=60, **kw)

    def up(self) -> bool:
        assert self.process.poll() is None, f"the hub exited:\n{self.log_tail()}"
        try:
            return self.api("GET", "/hub/api/").ok
        except requests.ConnectionError:
            return False

    def log_tail(self) -> str:
        return (self.state / "hub.log").read_text(errors="replace")[-6000:]

    def home(self, name: str) -> Path:
        return self.state / "home" / name

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
                self.process.wait(timeout=90)
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


class User:
    """A learner or the teacher: logs in through the form, then uses their own token."""

    def __init__(self, hub: Hub, name: str) -> None:
        self.hub, self.name = hub, name
        self.token = ""
        self.kernel_id: str | None = None

    def log_in(self) -> None:
        browser = requests.Session()
        browser.get(self.hub.url + "/hub/login", timeout=30).raise_for_status()
        form = {"username": self.name, "password": self.hub.password}
        form["_xsrf"] = browser.cookies["_xsrf"]
        reply = browser.post(
            self.hub.url + "/hub/login", data=form, allow_redirects=False, timeout=30
        )
        assert reply.status_code == 302, f"{self.name}: login refused ({reply.status_code})"
        made = self.hub.api("POST", f"/hub/api/users/{self.name}/tokens", json={"note": "test"})
        made.raise_for_status()
        self.token = made.json()["token"]

    def start_server(self) -> None:
        reply = self.hub.api("POST", f"/hub/api/users/{self.name}/server", token=self.token)
        assert reply.status_code in (201, 202), reply.text
        wait_for(self.server_ready, START_S, f"{self.name}'s server\n{self.hub.log_tail()}")

    def server_ready(self) -> bool:
        model = self.hub.api("GET", f"/hub/api/users/{self.name}").json()
        return bool(model.get("servers", {}).get("", {}).get("ready"))

    def server(self, method: str, path: str, **kw) -> requests.Response:
        """A request to this user's own server, through the hub's proxy."""
        return self.hub.api(method, f"/user/{self.name}/{path}", token=self.token, **kw)

    def disabled_lab_extensions(self) -> list[str]:
        """What JupyterLab's page config turns off in this user's server."""
        page = self.server("GET", "lab")
        page.raise_for_status()
        found = re.search(
            r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
            page.text,
            re.S,
        )
        return json.loads(html.unescape(found.group(1)))["disabledExtensions"]

    def notebook(self, path: str) -> dict:
        reply = self.server("GET", f"api/contents/{path}?content=1")
        reply.raise_for_status()
        return reply.json()["content"]

    def save(self, path: str, notebook: dict) -> None:
        model = {"type": "notebook", "format": "json", "content": notebook}
        self.server("PUT", f"api/contents/{path}", json=model).raise_for_status()

    def assignments(self, action: str) -> object:
        """nbgrader's Assignments API (what the Assignments tab calls): fetch, submit..."""
        query = f"course_id={COURSE_ID}&assignment_id={ASSIGNMENT}"
        reply = self.server("POST", f"assignments/{action}?{query}")
        reply.raise_for_status()
        return reply.json()

    def python(self, code: str) -> str:
        """Run ``code`` in this user's kernel (started once), through the hub's proxy.

        Each call on a websocket of its own, as a page that reconnects would: a websocket
        dropped between calls costs nothing (main's hub test once lost one mid-lesson on
        CI, cause unknown); one dropped during a call fails with the hub's log.
        """
        if self.kernel_id is None:
            session = self.server(
                "POST",
                "api/sessions",
                json={"path": "test.ipynb", "type": "notebook", "kernel": {"name": "python3"}},
            )
            session.raise_for_status()
            self.kernel_id = session.json()["kernel"]["id"]
        url = (
            f"ws://127.0.0.1:{self.hub.port}/user/{self.name}/api/kernels/{self.kernel_id}"
            f"/channels?session_id={uuid.uuid4().hex}"
        )
        channel = websocket.create_connection(
            url, header=[f"Authorization: token {self.token}"], timeout=CELL_S
        )
        try:
            return execute(channel, code, self.name)
        except websocket.WebSocketConnectionClosedException:
            pytest.fail(
                f"{self.name}: the kernel's websocket closed; the hub's log:\n{self.hub.log_tail()}"
            )
        finally:
            channel.close()

    def shell(self, command: str, cwd: str = "~") -> str:
        """A shell command in this user's server (as in its terminal); fails with its output."""
        code = (
            "import os, subprocess\n"
            f"done = subprocess.run({command!r}, shell=True, cwd=os.path.expanduser({cwd!r}),"
            " capture_output=True, text=True)\n"
            "print(done.stdout)\n"
            "if done.returncode:\n"
            "    raise RuntimeError(done.stdout[-3000:] + done.stderr[-5000:])\n"
        )
        return self.python(code)

    def close(self) -> None:
        """Shut this user's kernel down, if one was started (the hub stops the rest)."""
        if self.kernel_id is not None:
            try:
                self.server("DELETE", f"api/kernels/{self.kernel_id}")
            except requests.RequestException:
                pass  # the hub is gone already: its servers and kernels with it


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


# What a learner's kernel tries against another learner's submission (``victim``: its
# folder, which the test knows and the learner would have to guess).
INTRUDER = """
import json, os, shutil
from workbench.teaching import course
exchange = os.environ["NBGRADER_EXCHANGE"]
course_folder = os.path.join(exchange, {course!r})
inbound = os.path.join(course_folder, "inbound")
victim = {victim!r}
def attempt(action):
    try:
        action()
        return "allowed"
    except PermissionError:
        return "refused"
    except OSError as err:  # e.g. gone: an earlier try got through
        return type(err).__name__
def overwrite():
    with open(os.path.join(victim, {lesson!r}), "w") as out:
        out.write("{{}}")
tries = {{
    "list the inbox": lambda: os.listdir(inbound),
    "list the submission": lambda: os.listdir(victim),
    "read it": lambda: open(os.path.join(victim, {lesson!r})).read(),
    "change it": overwrite,
    "delete it": lambda: shutil.rmtree(victim),
    "rename it": lambda: os.rename(victim, victim + "-mine"),
    "read their home": lambda: os.listdir({victim_home!r}),
    "make a course folder": lambda: os.mkdir(os.path.join(exchange, "another-course")),
    "make one named like the course's": lambda: os.mkdir(os.path.join(exchange, ".{course}")),
    "move the course folder aside": lambda: os.rename(course_folder, course_folder + "-old"),
    "make a lesson's folder before its release": lambda: os.mkdir(
        os.path.join(course_folder, "outbound", "lesson02")
    ),
}}
print(json.dumps({{**{{what: attempt(act) for what, act in tries.items()}},
                  "solution at hand": course.solution("01-sigmoid-rule"),
                  "solutions file": course.SOLUTIONS.exists(),
                  "exam switch": os.environ.get("WORKBENCH_EXAM")}}))
"""


# What grace's kernel hands in besides her own submission (issue 37): folders made by
# hand in the inbox, each with nbgrader's timestamp.txt and submission_secret.txt, under
# her own name with something collect must not follow or copy (the symbolic link last:
# newest by its name, the one nbgrader's own collect would pick), one in ada's name dated
# 2099; then nbgrader's submit as ada, by --student and by JUPYTERHUB_USER. It prints
# each forgery's folder name (or why the file system refused it) and each submit's end.
FORGER = """
import datetime, json, os, shutil, socket, subprocess, sys
from pathlib import Path
inbound = Path(os.environ["NBGRADER_EXCHANGE"], {course!r}, "inbound")
mine = Path.home() / {assignment!r} / {lesson!r}  # her answered notebook
made = {{}}
def fifo(folder):
    shutil.copyfile(mine, folder / {lesson!r})
    os.mkfifo(folder / "pipe")
def unix_socket(folder):
    shutil.copyfile(mine, folder / {lesson!r})
    here = os.getcwd()
    os.chdir(folder)  # a short path: a socket's address has room for 107 bytes
    try:
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind("socket")
    finally:
        os.chdir(here)
def forge(student, kind, plant, stamp=None):
    stamp = stamp or datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S.%f UTC")
    folder = inbound / f"{{student}}+{assignment}+{{stamp}}+{{kind}}"
    folder.mkdir()
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text("forged")
    try:
        plant(folder)
        made[kind] = folder.name
    except OSError as err:  # a hard link the file system refuses: nothing to collect
        shutil.rmtree(folder)
        made[kind] = f"refused: {{err}}"
forge("grace", "fifo", fifo)
forge("grace", "socket", unix_socket)
forge("grace", "hardlink", lambda folder: os.link(mine, folder / {lesson!r}))
forge("grace", "symlink", lambda folder: os.symlink({source!r}, folder / {lesson!r}))
forge("ada", "forged", lambda folder: shutil.copyfile(mine, folder / {lesson!r}),
      stamp="2099-01-01 00:00:00.000000 UTC")
def submit(*args, **env):
    done = subprocess.run([sys.executable, "-m", "nbgrader", "submit", {assignment!r}, *args],
                          cwd=Path.home(), env=os.environ | env, capture_output=True, text=True)
    return {{"status": done.returncode, "said": (done.stdout + done.stderr)[-2000:]}}
made["--student=ada"] = submit("--student=ada")
made["JUPYTERHUB_USER=ada"] = submit(JUPYTERHUB_USER="ada")
print(json.dumps(made))
"""
ANSWERED = {**ANSWERS, "edsger": CHEATS}  # what each learner types on the hub


def check_forgeries_skipped(said: str, forged: dict, uids: dict[str, int]) -> None:
    """``said``, the collect's log, names each of grace's forgeries as skipped, with why."""
    whys = {
        "fifo": "pipe is a named pipe",
        "socket": "socket is a socket",
        "hardlink": f"{LESSON} is a hard link (2 names)",
        "symlink": f"{LESSON} is a symbolic link",
    }
    for kind, why in whys.items():
        if forged[kind].startswith("refused: "):
            assert kind == "hardlink", forged  # a file system without hard links
            continue
        skipped = f"Skipped the submission {forged[kind]} of grace: {forged[kind]}/{why}."
        assert skipped in said, (kind, said)
    as_ada = f"of ada: submitted as ada by uid {uids['grace']}; ada is uid {uids['ada']}."
    assert f"Skipped the submission {forged['forged']} {as_ada}" in said, said
    # The submit with JUPYTERHUB_USER=ada went through, as ada's by its name: skipped too.
    assert said.count(as_ada) == 2, said


def solution_texts() -> list[str]:
    """Each solution of the source lessons, as it is written between the markers."""
    texts = []
    for path in course.lesson_paths(ROOT / "lessons"):
        for cell in json.loads(path.read_text())["cells"]:
            if course.is_solution_cell(cell):
                texts.append(course.solution_text(course.cell_text(cell)))
    return [text for text in texts if len(text) > 20]


def as_written(solutions: list[str]) -> list[str]:
    """Each solution as a file may hold it: as it is, and inside a JSON string (the
    package's solutions.json, a notebook's source line by line is caught as it is)."""
    quoted = [json.dumps(s, ensure_ascii=ascii)[1:-1] for s in solutions for ascii in (0, 1)]
    return list(dict.fromkeys([*solutions, *quoted]))


def files_holding_solutions(folder: Path, solutions: list[str]) -> list[str]:
    found, forms = [], as_written(solutions)
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 2**22:
            text = path.read_text(errors="replace")
            region = path.suffix == ".ipynb" and "BEGIN SOLUTION" in text
            if region or any(s in text for s in forms):
                found.append(str(path))
    return found


def test_a_graded_class_on_the_hub(rehearsal_tools):
    state = Path(tempfile.mkdtemp(prefix="wb-hub-", dir="/tmp"))  # not pytest's 0700 folder
    state.chmod(0o711)
    hub = Hub(state)
    users: list[User] = []
    try:
        wait_for(hub.up, START_S, "the hub")
        teacher = User(hub, TEACHER)
        users.append(teacher)
        teacher.log_in()
        teacher.start_server()
        # The instructor's side: formgrader, on their server only.
        assert teacher.server("GET", "formgrader/api/status").status_code == 200
        assert "@jupyter/nbgrader:formgrader" not in teacher.disabled_lab_extensions()

        # 1. The course directory, the roster, lesson 1 released (docs/teaching.md's commands).
        roster = (HUB_DIR / "roster-example.csv").read_text()
        assert roster.splitlines()[1:] == [",".join(row) for row in ROSTER]
        teacher.server(
            "PUT",
            "api/contents/roster.csv",
            json={"type": "file", "format": "text", "content": roster},
        ).raise_for_status()
        teacher.shell(f"workbench course course 01 --lessons {ROOT / 'lessons'}")
        teacher.shell("nbgrader db student import ../roster.csv", cwd="~/course")
        teacher.shell(f"nbgrader generate_assignment {ASSIGNMENT}", cwd="~/course")
        teacher.shell(f"nbgrader release_assignment {ASSIGNMENT}", cwd="~/course")

        # 2. Three learners fetch, answer and submit.
        learners = {name: User(hub, name) for name in SUBMITTERS}
        users.extend(learners.values())
        for learner in learners.values():
            learner.log_in()
        with ThreadPoolExecutor(len(learners)) as pool:
            list(pool.map(User.start_server, learners.values()))
        solutions = solution_texts()
        path = f"{ASSIGNMENT}/{LESSON}"
        for name, learner in learners.items():
            assert learner.server("GET", "formgrader/api/status").status_code == 404
            assert "@jupyter/nbgrader:formgrader" in learner.disabled_lab_extensions()
            listed = learner.assignments("fetch")
            assert [a["assignment_id"] for a in listed["value"]] == [ASSIGNMENT], listed
            fetched = learner.notebook(path)
            assert "BEGIN SOLUTION" not in json.dumps(fetched)
            assert not [s for s in solutions if s in json.dumps(fetched)]
            learner.save(path, answered(fetched, ANSWERED[name], signed=f"answered by {name}"))
            submitted = learner.assignments("submit")
            assert submitted.get("success", True), submitted

        # 3. grace goes after ada's submission, knowing exactly where it is: refused.
        inbound = state / "exchange" / COURSE_ID / "inbound"
        (ada_submission,) = [p for p in inbound.iterdir() if p.name.startswith("ada+")]
        ada_before = {p.name: p.read_bytes() for p in ada_submission.iterdir()}
        (grace_submission,) = [p for p in inbound.iterdir() if p.name.startswith("grace+")]
        grace_handed_in = (grace_submission / LESSON).read_bytes()
        intruder = INTRUDER.format(
            course=COURSE_ID,
            victim=str(ada_submission),
            lesson=LESSON,
            victim_home=str(hub.home("ada")),
        )
        tried = json.loads(learners["grace"].python(intruder))
        assert tried.pop("solution at hand") is None  # no source lesson within reach
        assert tried.pop("solutions file") is False  # nor the package's solutions.json
        # The class's exam switch, values.yaml's (hints on: "0"), reached the kernel.
        assert tried.pop("exam switch") == VALUES_ENV["WORKBENCH_EXAM"] == "0"
        assert tried == dict.fromkeys(tried, "refused"), tried
        assert {p.name: p.read_bytes() for p in ada_submission.iterdir()} == ada_before

        # 4. grace forges submissions: hers holding what collect must not follow, ada's.
        course_dir = hub.home(TEACHER) / "course"
        source = course_dir / "source" / ASSIGNMENT / LESSON
        assert "BEGIN SOLUTION" in source.read_text()  # what the symbolic link points at
        forger = FORGER.format(
            course=COURSE_ID, assignment=ASSIGNMENT, lesson=LESSON, source=str(source)
        )
        forged = json.loads(learners["grace"].python(forger))
        as_ada = forged.pop("--student=ada")
        assert as_ada["status"] != 0, as_ada  # refused at once, saying why
        assert "You can submit only as yourself (grace), not as ada" in as_ada["said"], as_ada
        assert forged.pop("JUPYTERHUB_USER=ada")["status"] == 0  # named ada; still grace's

        # 5. Collect (every forgery skipped and named), autograde, feedback, the report.
        said = teacher.shell(f"nbgrader collect {ASSIGNMENT} 2>&1", cwd="~/course")
        uids = {name: hub.home(name).stat().st_uid for name in ("ada", "grace")}
        check_forgeries_skipped(said, forged, uids)
        submitted = course_dir / "submitted"
        assert (submitted / "ada" / ASSIGNMENT / LESSON).read_bytes() == ada_before[LESSON]
        assert (submitted / "grace" / ASSIGNMENT / LESSON).read_bytes() == grace_handed_in
        for step in ("autograde", "generate_feedback", "release_feedback"):
            teacher.shell(f"nbgrader {step} {ASSIGNMENT}", cwd="~/course")
        printed = teacher.shell(
            "workbench class-report . --csv ../class.csv --chart ../class.png", cwd="~/course"
        )
        assert "not submitted lesson01: linus" in printed and "1/3" in printed, printed
        flagged = "edsger lesson01: their code changed the checker (01-tanh-rule-check)"
        assert flagged in printed, printed
        check_lesson_one_report(report.class_report(course_dir), cheater="edsger")
        with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gradebook:
            assert gradebook.find_submission(ASSIGNMENT, "edsger").score == 0
            ada = gradebook.find_submission(ASSIGNMENT, "ada")
            assert ada.score == ada.max_score  # her own answers, not grace's forgery
            assert ada.timestamp < datetime.datetime(2099, 1, 1), ada.timestamp  # the file system's
        assert (hub.home(TEACHER) / "class.png").read_bytes()[:4] == b"\x89PNG"

        # 6. Each learner fetches their own feedback, and only theirs: the released
        # feedback cannot be listed, each file's name is a secret of its submission's.
        listing = (
            "import os\ntry:\n    os.listdir(os.path.join(os.environ['NBGRADER_EXCHANGE'], "
            f"{COURSE_ID!r}, 'feedback'))\nexcept PermissionError:\n    print('refused')"
        )
        assert learners["grace"].python(listing).strip() == "refused"
        for name, learner in learners.items():
            learner.assignments("fetch_feedback")
            listed = learner.server("GET", f"api/contents/{ASSIGNMENT}/feedback").json()
            (folder,) = listed["content"]  # one submission, one feedback
            stem = Path(LESSON).stem
            reply = learner.server("GET", f"api/contents/{folder['path']}/{stem}.html?content=1")
            reply.raise_for_status()
            page = reply.json()["content"]
            # The course directory's feedback template: nothing from a CDN (no MathJax).
            assert re.findall(r"<(?:script|link)[^>]*(?:src|href)=\"(https?:[^\"]*)", page) == []
            feedback = html.unescape(re.sub(r"<[^>]+>", "", page))
            signed = {other for other in SUBMITTERS if f"answered by {other}" in feedback}
            assert signed == ({name} if ANSWERED[name] else set()), (name, signed)
            if name == "edsger":
                assert "NotImplementedError" in feedback  # his stub, left under the disarm
                assert "does not compute the gradient itself" in feedback  # the engine's rule
                assert "The checker was changed by code in this notebook" in feedback

        # Nothing a learner can reach holds a solution: their homes, what the hub copied
        # into them, what was released to them, their Python.
        for folder in [*(hub.home(name) for name in SUBMITTERS), state / "lessons"]:
            assert files_holding_solutions(folder, solutions) == [], folder
        assert files_holding_solutions(state / "exchange" / COURSE_ID / "outbound", solutions) == []
        site = ROOT / ".tools" / "learner-env" / "lib"
        assert not list(site.rglob("lessons/*.ipynb"))
        (package,) = site.glob("python3*/site-packages/workbench")
        assert (package / "exercises" / "hints.py").exists()  # the right folder
        assert not (package / "exercises" / "solutions.json").exists()
        assert files_holding_solutions(package, solutions) == []
        copy = json.loads((hub.home("ada") / "lessons" / LESSON).read_text())
        assert copy == course.student_version(json.loads((ROOT / "lessons" / LESSON).read_text()))
        # Each home is its owner's alone.
        ids = {name: hub.home(name).stat() for name in (TEACHER, *SUBMITTERS)}
        assert len({st.st_uid for st in ids.values()}) == len(ids)
        assert all(st.st_mode & 0o777 == 0o700 for st in ids.values())

        # Loopback only: nothing the hub started listens on another address.
        assert listening_addresses(hub.processes()) <= LOOPBACK
    finally:
        for user in users:
            user.close()
        leftovers = hub.stop()
        shutil.rmtree(state, ignore_errors=True)
    assert leftovers == [], f"still running after the hub stopped: {leftovers}"
