"""deploy/hub/ read as the cluster would read it: Zero-to-JupyterHub's values, the image's
settings, the pinned packages, the sizing. Quick checks; tests/test_hub.py runs the same
settings through a real hub, tests/test_hub_image.py builds the image.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from jupyterhub.traitlets import ByteSpecification
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from workbench.teaching.classroom.coursedir import COURSE_ID
from workbench.teaching.classroom.exchange import hub_uid

ROOT = Path(__file__).resolve().parent.parent
HUB = ROOT / "deploy" / "hub"
VALUES = yaml.safe_load((HUB / "values.yaml").read_text())
OAUTH = yaml.safe_load((HUB / "values-oauth.yaml").read_text())
MEASURED = json.loads((HUB / "lesson_memory.json").read_text())
sys.path.insert(0, str(ROOT / "bench"))
import hub_sizing  # noqa: E402


def mib(size: str) -> float:
    """A memory size as JupyterHub (KubeSpawner) reads it, in MiB."""
    return ByteSpecification().validate(None, size) / 2**20


def test_memory_units_are_jupyterhubs_powers_of_two():
    assert mib("512M") == 512 and mib("1G") == 1024
    assert hub_sizing.mib("512M") == 512 and hub_sizing.mib("1G") == 1024
    with pytest.raises(Exception, match="not a valid memory specification"):
        mib("512Mi")  # what Kubernetes writes: JupyterHub refuses it
    text = (HUB / "values.yaml").read_text()
    assert '"M" is a\n  # MiB (2^20 bytes)' in text or "MiB (2^20 bytes)" in text


def test_memory_covers_the_measured_lessons():
    lessons = {name for name in MEASURED["lessons"] if name.endswith(".ipynb")}
    assert lessons == {path.name for path in (ROOT / "lessons").glob("*.ipynb")}, (
        "re-measure: deploy/hub/README.md, Memory (bench/lesson_memory.py, the learners' Python)"
    )
    server, kernel = MEASURED["jupyter_server_rss_mib"], MEASURED["max_peak_rss_mib"]
    child = MEASURED["max_children_peak_rss_mib"]
    memory = VALUES["singleuser"]["memory"]
    assert mib(memory["guarantee"]) >= server + kernel + child
    assert mib(memory["limit"]) >= server + 4 * kernel + child
    assert VALUES["cull"]["enabled"] and VALUES["cull"]["timeout"] > 0


def test_the_readme_sizing_table_is_the_one_computed_from_the_measurements():
    table = hub_sizing.sizing_table(MEASURED, VALUES)
    assert table in (HUB / "README.md").read_text()
    assert "| 4 vCPU, 16 GiB |" in table


def load_config_file(path: Path) -> Config:
    loader = PyFileConfigLoader(path.name, path=str(path.parent))
    return loader.load_config()


def test_one_course_id_and_the_exchange_where_the_volume_is(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXCHANGE", raising=False)
    config = load_config_file(HUB / "jupyter" / "nbgrader_config.py")
    assert config.CourseDirectory.course_id == COURSE_ID == "autodiff-workbench"
    mounts = VALUES["singleuser"]["storage"]["extraVolumeMounts"]
    (exchange,) = [m["mountPath"] for m in mounts if m["name"] == "nbgrader-exchange"]
    assert config.Exchange.root == exchange
    # The private exchange's classes are importable by those names.
    steps = ("submit", "release_assignment", "fetch_assignment", "fetch_feedback", "list")
    for name in (config.ExchangeFactory[step] for step in steps):
        module, _, cls = name.rpartition(".")
        assert hasattr(importlib.import_module(module), cls)
    # No other course id anywhere a teacher reads or the hub runs.
    for path in [*HUB.rglob("*"), ROOT / "docs" / "teaching.md", ROOT / "README.md"]:
        if path.is_file() and path.suffix in {".py", ".md", ".yaml", ".json", ".sh"}:
            for found in re.findall(r"course_id\s*=\s*[\"']([^\"']+)", path.read_text()):
                assert found == COURSE_ID, path


def test_the_exchange_script_makes_the_hubs_course_for_the_instructors_group():
    """values.yaml's init container makes the course's folders (tests/test_hub_exchange.py
    runs its script): for the course id of the image's settings, on the exchange's volume,
    for the group the hook gives instructors, who write there as a group."""
    containers = VALUES["singleuser"]["initContainers"]
    (init,) = [c for c in containers if c["name"] == "nbgrader-exchange"]
    *_, mount, course, group = init["command"]
    assert course == COURSE_ID
    (volume,) = init["volumeMounts"]
    mounts = VALUES["singleuser"]["storage"]["extraVolumeMounts"]
    assert volume["mountPath"] == mount and volume in mounts
    teacher = fake_spawner("teacher", ["instructors"], ["teacher"])
    identity_hook()(teacher)
    assert group == teacher.environment["NB_GID"]
    instructors = load_config_file(HUB / "jupyter-instructor" / "nbgrader_config.py")
    assert instructors.CourseDirectory.groupshared is True


def test_the_instructors_config_has_formgrader_and_a_course_directory():
    folder = HUB / "jupyter-instructor"
    config = load_config_file(folder / "nbgrader_config.py")
    assert config.CourseDirectory.root.endswith("/course")
    server = json.loads(
        (folder / "jupyter_server_config.d" / "nbgrader-instructor.json").read_text()
    )
    assert server["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"]
    page = json.loads((folder / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"]["@jupyter/nbgrader:formgrader"] is False
    setup = (HUB / "setup-learner-env.sh").read_text()
    assert "server extension disable --sys-prefix" in setup and "formgrader" in setup


def authenticator_class(values: dict):
    name = values["hub"]["config"]["JupyterHub"]["authenticator_class"]
    if "." not in name:  # an entry point name, as "generic-oauth"
        from importlib.metadata import entry_points

        (point,) = entry_points(group="jupyterhub.authenticators", name=name)
        return point.load()
    module, _, cls = name.rpartition(".")
    return getattr(importlib.import_module(module), cls)


def assert_real_settings(values: dict) -> None:
    """Every setting under hub.config names a real configurable trait of its class."""
    auth = authenticator_class(values)
    for section, settings in values["hub"]["config"].items():
        if section in {"JupyterHub", "Authenticator"}:
            cls = importlib.import_module("jupyterhub.app").JupyterHub
            cls = cls if section == "JupyterHub" else auth
        else:
            assert section == auth.__name__, f"settings for {section}, login by {auth.__name__}"
            cls = auth
        traits = cls.class_traits(config=True)
        unknown = set(settings) - set(traits)
        assert not unknown, f"{section}: no such settings {unknown}"


def test_the_login_is_an_lms_by_lti_13_and_never_the_test_login():
    pytest.importorskip("ltiauthenticator")
    auth = authenticator_class(VALUES)
    assert auth.__name__ == "LTI13Authenticator"
    assert_real_settings(VALUES)
    lti = VALUES["hub"]["config"]["LTI13Authenticator"]
    assert {"issuer", "authorize_url", "jwks_endpoint", "client_id"} <= set(lti)
    assert VALUES["hub"]["config"]["Authenticator"]["admin_users"]


def test_the_oauth_option_names_real_settings():
    pytest.importorskip("oauthenticator")
    merged = {"hub": {"config": {**VALUES["hub"]["config"], **OAUTH["hub"]["config"]}}}
    del merged["hub"]["config"]["LTI13Authenticator"]  # replaced by the OAuth login
    assert authenticator_class(merged).__name__ == "GenericOAuthenticator"
    assert_real_settings(merged)
    assert OAUTH["hub"]["config"]["Authenticator"]["allow_all"] is False


def identity_hook():
    namespace = {"c": Config()}
    for code in VALUES["hub"]["extraConfig"].values():
        exec(code, namespace)
    assert namespace["c"].KubeSpawner.pre_spawn_hook is namespace["per_user_identity"]
    return namespace["per_user_identity"]


class FakeDatabase:
    """The hub's database as the hook asks it: every user's name."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def query(self, column):
        assert column.key == "name"
        return [(name,) for name in self.names]


def fake_spawner(name: str, groups: list[str], everyone: list[str]):
    user = SimpleNamespace(
        name=name, groups=[SimpleNamespace(name=g) for g in groups], db=FakeDatabase(everyone)
    )
    return SimpleNamespace(user=user, environment={})


def test_each_user_runs_under_their_own_id_and_instructors_share_a_group():
    hook = identity_hook()
    names = ["teacher", "ada@school.example", "grace@school.example"]
    spawners = [fake_spawner(name, ["instructors"] * (name == "teacher"), names) for name in names]
    for spawner in spawners:
        hook(spawner)
    teacher, ada, grace = (s.environment for s in spawners)
    assert len({env["NB_UID"] for env in (teacher, ada, grace)}) == 3
    # The id is the one the instructors' collect works out from the name alone.
    assert [int(s.environment["NB_UID"]) for s in spawners] == [hub_uid(n) for n in names]
    assert all(10000 <= hub_uid(n) < 2**31 for n in names)
    # The instructors share a group; each learner has one of their own, shared with nobody
    # (issue 37, point 7: not docker-stacks' "users", 100, which every server's user is in).
    assert teacher["NB_GID"] == "2000"
    assert ada["NB_GID"] == ada["NB_UID"] and grace["NB_GID"] == grace["NB_UID"]
    assert len({env["NB_GID"] for env in (teacher, ada, grace)}) == 3
    assert teacher["WORKBENCH_ROLE"] == "instructor" and ada["WORKBENCH_ROLE"] == "learner"
    assert VALUES["singleuser"]["uid"] == 0  # start.sh starts as root, then switches


def test_no_pod_gives_its_volumes_to_a_group():
    """The chart sets fsGroup 100 unless told not to: on storage that applies it, every
    volume of the pod, the shared exchange included, would be given to that group, which
    every learner is in. values.yaml turns it off (null removes the chart's default), and
    nothing sets it again per user (a KubeSpawner.fs_gid function would hand the exchange
    to each learner's group in turn)."""
    assert "fsGid" in VALUES["singleuser"] and VALUES["singleuser"]["fsGid"] is None
    namespace = {"c": Config()}
    for code in VALUES["hub"]["extraConfig"].values():
        exec(code, namespace)
    assert "fs_gid" not in namespace["c"].KubeSpawner
    assert "supplemental_gids" not in namespace["c"].KubeSpawner


def test_every_package_of_the_image_is_pinned():
    lines = [
        line
        for line in (HUB / "requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert lines and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][^\s;]*", line) for line in lines)
    pinned = {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1] for line in lines}
    for line in (HUB / "requirements.in").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            assert pinned[name.lower().replace("_", "-")] == version, line
    # The single-user server has the chart's JupyterHub.
    assert "chart 4.3.3" in (HUB / "values.yaml").read_text() and pinned["jupyterhub"] == "5.4.4"


def test_two_users_whose_names_give_one_id_are_refused():
    """Names are many, ids 2**30: the hook never gives a second user a taken id (two
    names that share one are found in about 40,000 tries)."""
    by_id: dict[int, str] = {}
    for number in range(10**6):
        name = f"learner{number}@school.example"
        if hub_uid(name) in by_id:
            break
        by_id[hub_uid(name)] = name
    twins = [by_id[hub_uid(name)], name]
    with pytest.raises(RuntimeError, match=f"{name} and {twins[0]} would share user id"):
        identity_hook()(fake_spawner(name, [], twins))
    spawner = fake_spawner(twins[0], [], twins[:1])
    identity_hook()(spawner)  # alone, either is let in
    assert spawner.environment["NB_UID"] == str(hub_uid(twins[0]))
