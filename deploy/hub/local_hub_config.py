"""A JupyterHub on this machine, for trying the class set-up before a cluster.

    bash scripts/install_proxy.sh                  # configurable-http-proxy into .tools/
    .venv/bin/jupyterhub -f deploy/hub/local_hub_config.py
    # then open http://127.0.0.1:8000, log in with any name and any password

Any name logs in (DummyAuthenticator) and gets a server started as a plain local
process (SimpleLocalProcessSpawner) whose home is .hub/home/NAME; the first start
copies the lessons there (copy-lessons.sh, as the image does). These two classes
are JupyterHub's own, for testing: they give no isolation between users beyond
separate folders, so never open this hub to a network. Everything listens on
127.0.0.1 only. tests/test_hub.py runs three learners through it.

Settings from the environment (all optional):
  WORKBENCH_HUB_STATE      folder for the database, secrets and homes (default .hub)
  WORKBENCH_HUB_PORT       the hub's public port (8000); WORKBENCH_HUB_API_PORT (8081),
  WORKBENCH_PROXY_API_PORT the proxy's REST API (8001)
  WORKBENCH_HUB_API_TOKEN  if set, a service "course-admin" with this token may manage
                           users, their servers and their tokens (the test drives the hub so)
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
STATE = Path(os.environ.get("WORKBENCH_HUB_STATE", ROOT / ".hub")).resolve()
LOOPBACK = "127.0.0.1"


def port(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


c = get_config()  # noqa: F821 - JupyterHub defines it for config files

STATE.mkdir(parents=True, exist_ok=True)
c.JupyterHub.bind_url = f"http://{LOOPBACK}:{port('WORKBENCH_HUB_PORT', 8000)}"
c.JupyterHub.hub_ip = LOOPBACK
c.JupyterHub.hub_port = port("WORKBENCH_HUB_API_PORT", 8081)
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every learner's server
c.JupyterHub.cleanup_proxy = True

c.ConfigurableHTTPProxy.command = [str(ROOT / ".tools/chp/node_modules/.bin/configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://{LOOPBACK}:{port('WORKBENCH_PROXY_API_PORT', 8001)}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")

c.JupyterHub.authenticator_class = "dummy"  # any name, any password
c.JupyterHub.spawner_class = "simple"  # a local process per learner, home under STATE
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.ip = LOOPBACK
c.Spawner.default_url = "/lab/tree/lessons"
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
# The image runs copy-lessons.sh before the server; here a shell does the same.
c.Spawner.cmd = [
    "bash",
    "-c",
    '. "$0" && exec "$@"',
    str(HERE / "copy-lessons.sh"),
    sys.executable,
    "-m",
    "jupyterhub.singleuser",
]
c.Spawner.environment = {"WORKBENCH_LESSONS_SRC": str(ROOT / "lessons")}
if hasattr(os, "geteuid") and os.geteuid() == 0:
    c.Spawner.args = ["--allow-root"]  # a container's root: Jupyter Server refuses otherwise

if os.environ.get("WORKBENCH_HUB_API_TOKEN"):
    c.JupyterHub.services = [
        {"name": "course-admin", "api_token": os.environ["WORKBENCH_HUB_API_TOKEN"]}
    ]
    c.JupyterHub.load_roles = [
        {
            "name": "course-admin",
            "scopes": ["admin:users", "admin:servers", "tokens", "list:users"],
            "services": ["course-admin"],
        }
    ]
