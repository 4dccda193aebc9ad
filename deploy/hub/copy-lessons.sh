# Give a learner their own copy of the lessons, the first time their server starts.
#
# Sourced before the server starts: by docker-stacks' start.sh, the image's entrypoint
# (the image puts it in /usr/local/bin/before-notebook.d/; start.sh runs it as root when
# it is to switch to the learner's NB_UID, so the copy is then given to them), and by
# the rehearsal's spawner (deploy/hub/rehearsal_spawner.py), as the learner. The copy is
# made only when the learner has none: their edits survive a restart, and a new lesson
# release never overwrites their work. The lessons are the learners' versions: no
# solution is in them.
#   WORKBENCH_LESSONS_SRC   the course's lessons (default /opt/workbench/lessons)
#   WORKBENCH_LESSONS_DEST  the learner's copy (default $HOME/lessons)
workbench_src="${WORKBENCH_LESSONS_SRC:-/opt/workbench/lessons}"
workbench_dest="${WORKBENCH_LESSONS_DEST:-$HOME/lessons}"
if [ -d "$workbench_src" ] && [ ! -e "$workbench_dest" ]; then
    cp -R "$workbench_src" "$workbench_dest"
    if [ "$(id -u)" = 0 ] && [ -n "${NB_UID:-}" ]; then
        chown -R "$NB_UID:${NB_GID:-100}" "$workbench_dest"
    fi
    echo "copy-lessons: copied $workbench_src to $workbench_dest"
fi
unset workbench_src workbench_dest
