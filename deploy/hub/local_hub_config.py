"""The class set-up as one JupyterHub on this machine: a rehearsal before the cluster.

    sudo make hub          # = scripts/learner_env.sh, scripts/install_proxy.sh, then:
    .venv/bin/jupyterhub -f deploy/hub/local_hub_config.py
    # open http://127.0.0.1:8000: the roster's learners and the instructors log in,
    # with the password in .hub/password (made on first start)

What runs is what the cluster runs (values.yaml), on one machine:

- the users: the roster (WORKBENCH_ROSTER, a CSV with nbgrader's columns id,
  first_name, last_name, email; default deploy/hub/roster-example.csv) are the
  learners, WORKBENCH_INSTRUCTORS (default "teacher") the instructors: group
  "instructors", hub admins;
- each server runs under its own user id, chosen by values.yaml's own hook
  (``per_user_identity``, read out of values.yaml and run here), in its own home
  (.hub/home/NAME, mode 0700), with the learners' Python and settings of the image
  (.tools/learner-env, made by scripts/learner_env.sh with deploy/hub/setup-learner-env.sh:
  no solution in it) and values.yaml's singleuser.extraEnv (the exam switch);
- the learners' copies of the lessons (solutions removed) are copied into each home
  on first start (copy-lessons.sh, as the image does); instructors get formgrader and
  ~/course (instructor-config.sh);
- the nbgrader exchange is .hub/exchange, its folders made by values.yaml's own init
  container script (rehearsal_exchange.py): the top folder closed to learners, the
  course's folder made before any learner logs in; with
  workbench.teaching.classroom.exchange's private submissions.

The login is JupyterHub's DummyAuthenticator with one shared password: a rehearsal
tool. Everything listens on 127.0.0.1 only; never open it to a network. Switching
user ids needs root (the spawner says so otherwise). tests/test_hub.py runs a whole
graded lesson through it.

Settings from the environment (all optional):
  WORKBENCH_HUB_STATE      folder for the database, secrets, homes, exchange (default .hub)
  WORKBENCH_HUB_PORT       the hub's public port (8000); WORKBENCH_HUB_API_PORT (8081),
  WORKBENCH_PROXY_API_PORT the proxy's REST API (8001)
  WORKBENCH_HUB_PASSWORD   the shared password (default: random, in STATE/hub/password)
  WORKBENCH_HUB_API_TOKEN  if set, a service "course-admin" with this token may manage
                           users, their servers and their tokens (the test drives the hub so)
"""

import csv
import os
import secrets
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # rehearsal_spawner.py, rehearsal_exchange.py
from rehearsal_exchange import make_exchange  # noqa: E402

ROOT = HERE.parent.parent
STATE = Path(os.environ.get("WORKBENCH_HUB_STATE", ROOT / ".hub")).resolve()
LEARNER_ENV = ROOT / ".tools" / "learner-env"
LOOPBACK = "127.0.0.1"


def port(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def folder(path: Path, mode: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(mode)
    return path


def roster(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as rows:
        return [row["id"] for row in csv.DictReader(rows)]


def learner_lessons(target: Path) -> Path:
    """The learners' versions of the lessons (solutions removed), made afresh each start."""
    from workbench.teaching.course import LESSONS, lesson_paths, write_student_copy

    for source in lesson_paths(LESSONS):
        write_student_copy(source, target / source.name)
    return target


def password(state: Path) -> str:
    given = os.environ.get("WORKBENCH_HUB_PASSWORD")
    if given:
        return given
    path = state / "password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(12) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


VALUES = yaml.safe_load((HERE / "values.yaml").read_text(encoding="utf-8"))


def values_env() -> dict[str, str]:
    """values.yaml's singleuser.extraEnv: the class's settings (the exam switch)."""
    return {name: str(value) for name, value in VALUES["singleuser"]["extraEnv"].items()}


def values_hook(name: str):
    """A function defined in values.yaml's hub.extraConfig: the cluster's own code."""
    namespace: dict = {"c": get_config()}  # noqa: F821
    for code in VALUES["hub"]["extraConfig"].values():
        exec(code, namespace)  # noqa: S102 - our own values.yaml
    return namespace[name]


c = get_config()  # noqa: F821 - JupyterHub defines it for config files

# The state folder: the hub's own files private; homes and the exchange reachable by
# every user id, as the cluster's volumes are mounted in every pod.
folder(STATE, 0o711)
HUB = folder(STATE / "hub", 0o700)
HOMES = folder(STATE / "home", 0o711)
EXCHANGE = STATE / "exchange"
make_exchange(EXCHANGE, VALUES)
LESSONS = learner_lessons(folder(STATE / "lessons", 0o755))

c.JupyterHub.bind_url = f"http://{LOOPBACK}:{port('WORKBENCH_HUB_PORT', 8000)}"
c.JupyterHub.hub_ip = LOOPBACK
c.JupyterHub.hub_port = port("WORKBENCH_HUB_API_PORT", 8081)
c.JupyterHub.db_url = f"sqlite:///{HUB / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(HUB / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server
c.JupyterHub.cleanup_proxy = True

c.ConfigurableHTTPProxy.command = [
    str(ROOT / ".tools/chp/node_modules/.bin/configurable-http-proxy")
]
c.ConfigurableHTTPProxy.api_url = f"http://{LOOPBACK}:{port('WORKBENCH_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.pid_file = str(HUB / "proxy.pid")

# Who may log in: the roster's learners and the instructors.
LEARNERS = roster(Path(os.environ.get("WORKBENCH_ROSTER", HERE / "roster-example.csv")))
INSTRUCTORS = os.environ.get("WORKBENCH_INSTRUCTORS", "teacher").split(",")
c.JupyterHub.authenticator_class = "dummy"  # a rehearsal: one shared password
c.DummyAuthenticator.password = password(HUB)
c.Authenticator.allowed_users = set(LEARNERS) | set(INSTRUCTORS)
c.Authenticator.admin_users = set(INSTRUCTORS)
c.JupyterHub.load_groups = {"instructors": {"users": INSTRUCTORS}}

# Each server under its own user id (the cluster's hook), in its own home.
c.JupyterHub.spawner_class = "rehearsal_spawner.RehearsalSpawner"
c.RehearsalSpawner.home_root = str(HOMES)
c.Spawner.pre_spawn_hook = values_hook("per_user_identity")
c.Spawner.ip = LOOPBACK
c.Spawner.default_url = "/lab/tree/lessons"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# The image's start hooks, then the single-user server, with the learners' Python.
c.Spawner.cmd = [
    "bash",
    "-c",
    '. "$0" && . "$1" && shift && exec "$@"',
    str(HERE / "copy-lessons.sh"),
    str(HERE / "instructor-config.sh"),
    str(LEARNER_ENV / "bin" / "python"),
    "-m",
    "jupyterhub.singleuser",
]
c.Spawner.environment = {
    **values_env(),
    "PATH": f"{LEARNER_ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    "JUPYTER_CONFIG_PATH": str(HERE / "jupyter"),  # the image's /etc/jupyter
    "WORKBENCH_INSTRUCTOR_CONFIG": str(HERE / "jupyter-instructor"),
    "WORKBENCH_LESSONS_SRC": str(LESSONS),
    "NBGRADER_EXCHANGE": str(EXCHANGE),
    "MPLBACKEND": "Agg",
}
c.Spawner.env_keep = ["LANG", "LC_ALL"]  # not the hub's PYTHONPATH or VIRTUAL_ENV

if os.environ.get("WORKBENCH_HUB_API_TOKEN"):
    c.JupyterHub.services = [
        {"name": "course-admin", "api_token": os.environ["WORKBENCH_HUB_API_TOKEN"]}
    ]
    c.JupyterHub.load_roles = [
        {
            "name": "course-admin",
            "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "groups"],
            "services": ["course-admin"],
        }
    ]
