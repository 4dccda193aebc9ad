"""The rehearsal's spawner: each user's server is a local process under their own user id.

On the cluster, values.yaml's ``per_user_identity`` hook gives each server its user id
(``NB_UID`` = 10000 + 30 bits of the SHA-256 of the user's name) and group (``NB_GID``:
2000 for instructors, each learner's own for a learner), and docker-stacks' start.sh
switches to them, with the image's group ``users`` (100) added, before the start hooks
and the server. Here the same hook runs (local_hub_config.py reads it out of
values.yaml) and this spawner does start.sh's part: it makes the user's home
(mode 0700, theirs), switches to their ids, sources the same start hooks
(``copy-lessons.sh``, ``instructor-config.sh``) and starts the server.

start.sh also renames the image's user (jovyan) to the new id, so that the server
knows who it is: nbgrader asks (``pwd.getpwuid``), and takes the hub's name for a
"jovyan". Here no entry is added to /etc/passwd: each server sees a passwd file of
its own, one line naming its id "jovyan", through nss_wrapper (Debian's
libnss-wrapper, installed by scripts/learner_env.sh). As in separate pods, a server
knows no other user's id.

Switching ids needs root: started by anyone else, the spawner refuses, saying so.
"""

from __future__ import annotations

import glob
import os
import shutil

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Unicode

NEEDS_ROOT = (
    "the rehearsal gives each learner their own user id, as the cluster does, and only "
    "root can start a process under another id: run `make hub` (or the test) as root"
)
NSS_WRAPPER = "/usr/lib/*/libnss_wrapper.so"
USERS_GID = 100  # docker-stacks' group "users": start.sh adds every server's user to it
INSTRUCTORS_GID = 2000  # values.yaml's per_user_identity
NO_NSS_WRAPPER = "nss_wrapper is missing: apt install libnss-wrapper (scripts/learner_env.sh does)"


class RehearsalSpawner(LocalProcessSpawner):
    """A local process per user, under the ids the hub's hook chose (NB_UID, NB_GID)."""

    home_root = Unicode(help="the folder that holds every user's home").tag(config=True)

    @property
    def home(self) -> str:
        return os.path.join(self.home_root, self.user.name)

    def ids(self) -> tuple[int, int]:
        return int(self.environment["NB_UID"]), int(self.environment["NB_GID"])

    def make_home(self) -> None:
        uid, gid = self.ids()
        os.makedirs(self.home, exist_ok=True)
        os.chown(self.home, uid, gid)
        os.chmod(self.home, 0o700)

    def identity_files(self) -> dict[str, str]:
        """This server's own passwd and group files, for nss_wrapper (as start.sh's usermod)."""
        uid, gid = self.ids()
        folder = os.path.join(os.path.dirname(self.home_root), "identities", self.user.name)
        os.makedirs(folder, mode=0o755, exist_ok=True)
        groups = f"users:x:{USERS_GID}:jovyan\ninstructors:x:{INSTRUCTORS_GID}:\n"
        if gid != INSTRUCTORS_GID:
            groups += f"jovyan:x:{gid}:\n"  # a learner's own group: start.sh's groupadd
        files = {
            "NSS_WRAPPER_PASSWD": f"jovyan:x:{uid}:{gid}:{self.user.name}:{self.home}:/bin/bash\n",
            "NSS_WRAPPER_GROUP": groups,
        }
        paths = {}
        for variable, text in files.items():
            path = os.path.join(folder, variable.rsplit("_", 1)[-1].lower())
            with open(path, "w") as out:
                out.write(text)
            os.chmod(path, 0o644)
            paths[variable] = path
        return paths

    def make_preexec_fn(self, name):
        if os.geteuid() != 0:
            raise PermissionError(NEEDS_ROOT)
        self.make_home()
        uid, gid, home = *self.ids(), self.home

        def become_the_user():  # in the child, before exec: what start.sh does with sudo
            os.setgid(gid)
            os.setgroups([gid, USERS_GID])  # start.sh: useradd --gid NB_GID --groups 100
            os.setuid(uid)
            os.chdir(home)

        return become_the_user

    def user_env(self, env):
        env.update(USER=self.user.name, HOME=self.home, SHELL=shutil.which("bash") or "/bin/sh")
        wrappers = glob.glob(NSS_WRAPPER)
        if not wrappers:
            raise FileNotFoundError(NO_NSS_WRAPPER)
        env.update(LD_PRELOAD=wrappers[0], **self.identity_files())
        return env

    async def move_certs(self, paths):
        return paths  # no internal TLS in the rehearsal
