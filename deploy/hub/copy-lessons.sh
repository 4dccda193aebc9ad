# Give a learner their own copy of the lessons, the first time their server starts.
#
# Sourced by docker-stacks' start.sh, the image's entrypoint (the image puts it in
# /usr/local/bin/before-notebook.d/), and by local_hub_config.py's command before
# jupyterhub-singleuser. The copy is made only when the learner has none: their
# edits survive a restart, and a new lesson release never overwrites their work.
#   WORKBENCH_LESSONS_SRC   the course's lessons (default /opt/workbench/lessons)
#   WORKBENCH_LESSONS_DEST  the learner's copy (default $HOME/lessons)
workbench_src="${WORKBENCH_LESSONS_SRC:-/opt/workbench/lessons}"
workbench_dest="${WORKBENCH_LESSONS_DEST:-$HOME/lessons}"
if [ -d "$workbench_src" ] && [ ! -e "$workbench_dest" ]; then
    cp -R "$workbench_src" "$workbench_dest"
    echo "copy-lessons: copied $workbench_src to $workbench_dest"
fi
unset workbench_src workbench_dest
