# nbgrader for everyone on the hub (the image installs it as /etc/jupyter/nbgrader_config.py;
# the rehearsal names this folder in JUPYTER_CONFIG_PATH). One course id everywhere:
# the same in `workbench course`, docs/teaching.md and the tests.
import os

c = get_config()  # noqa: F821 - nbgrader defines it for config files
c.CourseDirectory.course_id = "autodiff-workbench"
# The exchange: one volume shared by every server (values.yaml mounts it here).
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# Each learner runs as their own user id (deploy/hub/README.md): submissions readable by
# their owner and the instructors' group only, inbound/ sticky
# (workbench.teaching.classroom.exchange).
c.ExchangeFactory.submit = "workbench.teaching.classroom.exchange.PrivateSubmit"
c.ExchangeFactory.release_assignment = "workbench.teaching.classroom.exchange.StickyRelease"
# The exchange's top folder is closed to learners (values.yaml's init container makes the
# course's folders first): their steps need only to enter it, not nbgrader's o+w.
c.ExchangeFactory.fetch_assignment = "workbench.teaching.classroom.exchange.ClosedRootFetch"
c.ExchangeFactory.fetch_feedback = "workbench.teaching.classroom.exchange.ClosedRootFetchFeedback"
c.ExchangeFactory.list = "workbench.teaching.classroom.exchange.ClosedRootList"
