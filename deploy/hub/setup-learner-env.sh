#!/usr/bin/env bash
# Install and configure the learners' Python: the same steps in the image (Dockerfile)
# and in the local rehearsal (scripts/learner_env.sh), so that what `make hub` runs is
# what the cluster runs.
#
#   setup-learner-env.sh PYTHON REQUIREMENTS WHEEL
#
# 1. every package pinned (requirements.txt, --no-deps: nothing is resolved here),
#    then the autodiff-workbench wheel, then `pip check` (a missing pin fails here);
# 2. no solution in the learners' Python: the package carries none (the solutions are a
#    file of the course repository, solutions/autodiff-workbench-solutions.json, never
#    in the wheel: docs/teaching.md); step 4 checks that the installed package finds
#    none. The button's last level then says there is no written solution; hints, which
#    stop short of the code, stay (graded exams: docs/teaching.md);
# 3. nbgrader's teacher-side extensions off for everyone: formgrader, create-assignment
#    and the course list (the instructors' servers turn them on again with the
#    config folder jupyter-instructor/, see deploy/hub/README.md);
# 4. the build fails, not the class, if a front-end the lessons need is missing, or if
#    the package can still find a solution.
# 5. the course's JupyterLab defaults (workbench/lab_defaults.json: widget state saved in
#    the notebook, so a notebook reopened after its kernel is gone shows the course's
#    "run this cell again" note, not "model not found").
set -euo pipefail
python=$1 requirements=$2 wheel=$3
bin=$(dirname "$python")

"$python" -m pip install --no-cache-dir --no-deps --disable-pip-version-check -q -r "$requirements"
"$python" -m pip install --no-cache-dir --no-deps --disable-pip-version-check -q --force-reinstall "$wheel"
"$python" -m pip check
"$python" -I -c 'from workbench.teaching.cli import install_lab_defaults; install_lab_defaults()'
# -I (isolated) below: the installed package, never a workbench/ in the current folder
# (a checkout, where the rehearsal runs this) nor one on PYTHONPATH.

"$bin/jupyter" server extension disable --sys-prefix \
    nbgrader.server_extensions.formgrader nbgrader.server_extensions.course_list 2>/dev/null
"$bin/jupyter" labextension disable --level=sys_prefix \
    @jupyter/nbgrader:formgrader @jupyter/nbgrader:create-assignment @jupyter/nbgrader:course-list 2>/dev/null

"$bin/jupyter" labextension list > /tmp/extensions.txt 2>&1
for wanted in "@jupyter-widgets/jupyterlab-manager.*enabled" "anywidget.*enabled" \
              "@jupyter/nbgrader.*enabled"; do
    grep -Eq "$wanted" /tmp/extensions.txt || { cat /tmp/extensions.txt; echo "missing: $wanted" >&2; exit 1; }
done
rm /tmp/extensions.txt
"$python" -I -c "import workbench as wb; x = wb.tensor([1.0], requires_grad=True); (x * x).sum().backward(); assert x.grad.item() == 2.0"
# (from an empty folder, with no WORKBENCH_SOLUTIONS: only what the package itself finds)
python_path="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
(cd "$(mktemp -d)" && env -u WORKBENCH_SOLUTIONS "$python_path" -I -c "import pathlib, workbench; from workbench.teaching import course; assert course.solution('01-sigmoid-rule') is None and not list(pathlib.Path(workbench.__file__).parent.rglob('*solutions*.json')), 'a solution is left'")
echo "learner environment ready: $("$python" -c 'import sys; print(sys.prefix)')"
