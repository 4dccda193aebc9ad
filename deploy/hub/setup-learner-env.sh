#!/usr/bin/env bash
# Install and configure the learners' Python: the same steps in the image (Dockerfile)
# and in the local rehearsal (scripts/learner_env.sh), so that what `make hub` runs is
# what the cluster runs.
#
#   setup-learner-env.sh PYTHON REQUIREMENTS WHEEL
#
# 1. every package pinned (requirements.txt, --no-deps: nothing is resolved here),
#    then the autodiff-workbench wheel, then `pip check` (a missing pin fails here);
# 2. no solution in the learners' Python: the package can carry every exercise's
#    solution (workbench/exercises/solutions.json, for self-study; the hint button shows
#    it after one checked attempt). A class's learners get none: it is deleted here, in
#    the image's same RUN as the install, so that no layer holds it (the image's context
#    leaves it out of the wheel as well). The button's last level then says there is no
#    written solution; hints, which stop short of the code, stay (graded exams: docs/teaching.md);
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
"$python" -I -c 'from workbench.cli import install_lab_defaults; install_lab_defaults()'
# -I (isolated): the installed package, never a workbench/ in the current folder (a
# checkout, where the rehearsal runs this) nor one on PYTHONPATH; and only a file
# inside this Python's own prefix is deleted.
# (Both paths resolved: the Python may be reached through a symbolic link.)
solutions=$("$python" -I -c 'import os; from workbench import course; print(os.path.realpath(course.SOLUTIONS))')
prefix=$("$python" -I -c 'import os, sys; print(os.path.realpath(sys.prefix))')
case "$solutions" in
    "$prefix"/*) rm -f "$solutions" ;;
    *) echo "setup-learner-env.sh: $solutions is not in $prefix" >&2; exit 1 ;;
esac

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
"$python" -I -c "from workbench import course; assert not course.SOLUTIONS.exists() and course.solution('01-sigmoid-rule') is None, 'a solution is left'"
echo "learner environment ready: $("$python" -c 'import sys; print(sys.prefix)')"
