# An instructor's server gets nbgrader's teacher side: formgrader, the course list and
# the course directory ~/course (the config folder jupyter-instructor/). A learner's
# server keeps the image's defaults: formgrader off (setup-learner-env.sh).
#
# Sourced before the server starts, like copy-lessons.sh (the image's start hooks; the
# rehearsal's spawner). WORKBENCH_ROLE is set per user by the hub (values.yaml's
# hub.extraConfig, which the rehearsal runs too).
#   WORKBENCH_INSTRUCTOR_CONFIG  the config folder (default /opt/workbench/jupyter-instructor)
if [ "${WORKBENCH_ROLE:-learner}" = instructor ]; then
    export JUPYTER_CONFIG_PATH="${WORKBENCH_INSTRUCTOR_CONFIG:-/opt/workbench/jupyter-instructor}${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
    echo "instructor-config: formgrader on, course directory ~/course"
fi
