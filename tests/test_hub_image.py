"""The learners' image: built in stages from a context without solutions, and none in any layer.

deploy/hub/Dockerfile's `learner` stage is built with Podman (Debian's podman, buildah
and runc, as root; settings in tests/hub_image/containers.conf) from the context
scripts/hub_image_context.py makes. Its production base cannot be pulled here (no
registry), so the test builds it on a stand-in made from Debian's packages: debootstrap
of Debian 12, imported as localhost/workbench-debian, and tests/hub_image/Containerfile.base
on top (kept between runs: making it takes a few minutes). Then:

- the context holds the learners' copies of the lessons and no solution;
- every file of every layer of the built image is read: none holds a solution marker, the
  text of any solution in the source lessons (as written or inside a JSON string), or the
  package's solutions.json (which the package ships for self-study);
- the single-user server starts inside the image (JupyterLab, as a learner, on
  127.0.0.1): the start hooks copied the lessons into the learner's home, formgrader is
  off, the lessons' package imports and finds no solution to show.

Skips only where the machine cannot run it: not root, or no podman/debootstrap (as root,
scripts/test.sh installs them from Debian's packages).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
import requests

from workbench.teaching import course

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "hub_image"
DEBIAN = "localhost/workbench-debian:bookworm"
STAND_IN = ("Containerfile.base", "start.sh", "fix-permissions")
# Tagged by its files: a changed stand-in is built anew.
BASE = (
    "localhost/workbench-test-base:"
    + hashlib.sha256(b"".join((HERE / name).read_bytes() for name in STAND_IN)).hexdigest()[:12]
)
# This machine's certificate store (its PyPI traffic goes through a proxy with a
# certificate of its own), mounted read-only while an image builds: in no layer.
CA_BUNDLE = Path(os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt"))
IMAGE = "localhost/autodiff-workbench-learner:test"
MIRROR = "http://deb.debian.org/debian"
LESSON = "01_sigmoid_gradient.ipynb"


def build_mounts() -> list[str]:
    if not CA_BUNDLE.is_file():
        return []
    return ["--volume", f"{CA_BUNDLE}:/etc/ssl/certs/ca-certificates.crt:ro"]


def podman(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    env = os.environ | {"CONTAINERS_CONF": str(HERE / "containers.conf")}
    done = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, env=env, **kw
    )
    assert done.returncode == 0, (
        f"podman {' '.join(args[:3])}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )
    return done


def image_exists(name: str) -> bool:
    env = os.environ | {"CONTAINERS_CONF": str(HERE / "containers.conf")}
    return subprocess.run(["podman", "image", "exists", name], env=env, timeout=60).returncode == 0


@pytest.fixture(scope="module")
def base_image() -> str:
    """The stand-in base, built once on this machine and kept in Podman's storage."""
    if os.geteuid() != 0:
        pytest.skip("building images with rootful Podman needs root")
    for tool in ("podman", "debootstrap"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (scripts/test.sh installs it as root)")
    if not image_exists(DEBIAN):
        with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
            rootfs = Path(tmp) / "rootfs"
            command = ["debootstrap", "--variant=minbase", "--include=python3,python3-venv"]
            done = subprocess.run(
                [*command, "bookworm", str(rootfs), MIRROR],
                capture_output=True,
                text=True,
                timeout=1200,
            )
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
            archive = Path(tmp) / "rootfs.tar"
            subprocess.run(
                ["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True, timeout=600
            )
            podman("import", str(archive), DEBIAN)
    if not image_exists(BASE):
        podman(
            "build", "--network=host", "-t", BASE, "-f", str(HERE / "Containerfile.base"), str(HERE)
        )
    return BASE


def solution_texts() -> list[str]:
    texts = []
    for path in course.lesson_paths(ROOT / "lessons"):
        for cell in json.loads(path.read_text())["cells"]:
            if course.is_solution_cell(cell):
                texts.append(course.solution_text(course.cell_text(cell)))
    return [text for text in texts if len(text) > 20]


LESSON_NAMES = {path.name for path in course.lesson_paths(ROOT / "lessons")}


def as_written(solutions: list[str]) -> list[bytes]:
    """Each solution as a file may hold it: as it is, and inside a JSON string (the
    package's solutions.json; a notebook's source, line by line, holds it as it is)."""
    quoted = [json.dumps(s, ensure_ascii=ascii)[1:-1] for s in solutions for ascii in (0, 1)]
    return [form.encode() for form in dict.fromkeys([*solutions, *quoted])]


def holds_a_solution(name: str, data: bytes, solutions: list[bytes]) -> bool:
    """The text of a solution anywhere; a solution region in a lesson (the package's own
    code, the lessons' README and nbgrader's own example notebooks name the markers);
    the package's solutions.json, whatever it holds."""
    region = Path(name).name in LESSON_NAMES and b"BEGIN SOLUTION" in data
    shipped = Path(name).name in ("solutions.json", course.SOLUTIONS_NAME)
    return region or shipped or any(s in data for s in solutions)


@pytest.fixture(scope="module")
def learner_image(base_image, tmp_path_factory) -> str:
    context = tmp_path_factory.mktemp("hub-image") / "context"
    command = [sys.executable, str(ROOT / "scripts" / "hub_image_context.py"), str(context)]
    subprocess.run(command, check=True, timeout=300)
    solutions = as_written(solution_texts())
    # The check finds what it looks for: the package's solutions.json, by its text alone.
    assert holds_a_solution("elsewhere.json", course.SOLUTIONS.read_bytes(), solutions)
    for path in context.rglob("*"):  # the builder is never sent a solution
        if path.is_file():
            assert not holds_a_solution(path.name, path.read_bytes(), solutions), path
    assert (context / "lessons" / LESSON).exists()
    podman(
        "build",
        "--network=host",
        *build_mounts(),
        "--target",
        "learner",
        "--build-arg",
        f"BASE_IMAGE={base_image}",
        "-t",
        IMAGE,
        str(context),
        timeout=1500,
    )
    yield IMAGE
    podman("rmi", "-f", IMAGE)


def layers(image: str, folder: Path) -> list[tarfile.TarFile]:
    """The image's layers, as tar archives (``podman save``, Docker's archive format)."""
    archive = folder / "image.tar"
    podman("save", "--format", "docker-archive", "-o", str(archive), image)
    outer = tarfile.open(archive)
    manifest = json.load(outer.extractfile("manifest.json"))
    return [
        tarfile.open(fileobj=io.BytesIO(outer.extractfile(name).read()))
        for name in manifest[0]["Layers"]
    ]


def test_no_layer_of_the_learners_image_holds_a_solution(learner_image, tmp_path):
    solutions = as_written(solution_texts())
    found, lessons_seen, files = [], 0, 0
    for k, layer in enumerate(layers(learner_image, tmp_path)):
        for member in layer:
            if not member.isfile():
                continue
            files += 1
            data = layer.extractfile(member).read()
            if member.name.endswith(".ipynb") and "/lessons/" in f"/{member.name}":
                lessons_seen += 1
            if holds_a_solution(member.name, data, solutions):
                found.append(f"layer {k}: {member.name}")
    assert files > 1000 and lessons_seen >= len(course.lesson_paths(ROOT / "lessons"))
    assert found == []


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_server_starts_in_the_image_as_a_learner_gets_it(learner_image):
    port, token, name = free_port(), secrets.token_hex(16), f"wb-test-{secrets.token_hex(4)}"
    command = ["jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}"]
    command.append(f"--IdentityProvider.token={token}")
    podman("run", "-d", "--rm", "--network=host", "--name", name, learner_image, *command)
    url, headers = f"http://127.0.0.1:{port}", {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/api/status", headers=headers, timeout=5).ok:
                    break
            except requests.ConnectionError:
                time.sleep(1)
        else:
            pytest.fail("the server in the image did not answer in 120 s")
        listed = requests.get(f"{url}/api/contents/lessons", headers=headers, timeout=30).json()
        names = {entry["name"] for entry in listed["content"]}
        assert {p.name for p in course.lesson_paths(ROOT / "lessons")} <= names
        copy = requests.get(f"{url}/api/contents/lessons/{LESSON}", headers=headers, timeout=30)
        source = json.loads((ROOT / "lessons" / LESSON).read_text())
        served = [course.cell_text(cell) for cell in copy.json()["content"]["cells"]]
        assert served == [course.cell_text(c) for c in course.student_version(source)["cells"]]
        assert (
            requests.get(f"{url}/formgrader/api/status", headers=headers, timeout=30).status_code
            == 404
        )
        assert requests.get(
            f"{url}/assignments?course_id=autodiff-workbench", headers=headers, timeout=30
        ).ok
        probe = (
            "import workbench as wb; from workbench.teaching import course;"
            "x = wb.tensor([1.0], requires_grad=True); (x * x).sum().backward();"
            "print(x.grad.item(), course.solution('01-sigmoid-rule'), course.SOLUTIONS.exists(),"
            "course.exam_mode())"
        )
        done = podman("exec", name, "python", "-c", probe)
        # The engine works; no solution, no solutions.json; hints on (values.yaml's switch
        # is the cluster's to set, the image sets none).
        assert done.stdout.split() == ["2.0", "None", "False", "False"]
    finally:
        subprocess.run(
            ["podman", "rm", "-f", name],
            capture_output=True,
            timeout=120,
            env=os.environ | {"CONTAINERS_CONF": str(HERE / "containers.conf")},
        )
