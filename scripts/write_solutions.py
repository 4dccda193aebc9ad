"""Write workbench/exercises/solutions.json from the source lessons' solution cells.

Run it after changing a solution in ``lessons/``; ``tests/test_course.py`` fails until
the two agree. The file ships in the wheel, so that a learner with an installed
workbench gets each solution after a checked attempt (unless ``WORKBENCH_EXAM`` is set).
"""

from workbench import course

if __name__ == "__main__":
    print("wrote", course.write_solutions())
