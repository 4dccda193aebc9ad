"""The teacher's side of the course: nbgrader course directories, the answer key, the
class report, the schedule, and the hub's private exchange.

Nothing here is imported by ``import workbench``; the ``workbench`` command calls it::

    workbench course ~/course --lessons 01 02      # nbgrader's source/, one assignment a lesson
    workbench course ~/course --whole --exam       # one assignment, no hints: an exam
    workbench answer-key -o answer-key.md          # every exercise's solution, for the teacher
    workbench class-report ~/course --csv class.csv --chart class.png
    workbench schedule                             # each lesson's time to do

``coursedir.py`` (course directories and the exam switch), ``solution_key.py`` (the answer key),
``class_report.py`` (the class report over nbgrader's gradebook and the autograded
notebooks), ``schedule.py``, ``exchange.py`` (nbgrader's exchange, with submissions
only the instructors' group can read: the hub in deploy/hub/ uses it).
"""
