#!/bin/bash
# The stand-in's entrypoint: docker-stacks' start.sh, reduced to what the tests need
# (as the learner, no user switch): source every before-notebook.d hook, then run.
set -e
for hook in /usr/local/bin/before-notebook.d/*.sh; do
    [ -e "$hook" ] && . "$hook"
done
exec "$@"
