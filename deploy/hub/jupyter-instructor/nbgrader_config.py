# nbgrader for the instructors only (their servers put this folder first in
# JUPYTER_CONFIG_PATH): the course directory, where formgrader and every nbgrader
# command work, is ~/course in the instructor's own home (made by `workbench course`).
import os

c = get_config()  # noqa: F821 - nbgrader defines it for config files
c.CourseDirectory.root = os.path.join(os.path.expanduser("~"), "course")
c.ExecutePreprocessor.timeout = 120  # seconds per cell; a lesson runs in under a minute
# The exchange's course folders belong to root and the instructors' group, made before
# any learner could take them (values.yaml's init container): the instructors write
# there as a group, nbgrader's groupshared (which also leaves the top folder's mode alone).
c.CourseDirectory.groupshared = True
# Each learner's server runs under its own user id, which the instructor's server cannot
# name (no shared passwd across pods): nbgrader's owner check would call every
# submission a "cheating attempt?". SafeCollect checks owners itself: each learner's
# id is the hub's hub_uid of their name (values.yaml's per_user_identity). (Set on
# ExchangeCollect: nbgrader calls CollectApp's setting outdated, at every collect.)
c.ExchangeCollect.check_owner = False
c.SafeCollect.learner_uids = "hub"
# Collect trusts nothing in inbound/: a submission holding a link, a pipe, a socket or a
# device is skipped and reported, the rest collected; times from the file system, not
# from a learner's timestamp.txt; a submission only if it belongs to the learner it is
# named for (workbench.teaching.classroom.exchange.SafeCollect).
c.ExchangeFactory.collect = "workbench.teaching.classroom.exchange.SafeCollect"
