"""Write solutions/autodiff-workbench-solutions.json from the source lessons' solution cells.

Run it after changing a solution in ``lessons/``; ``tests/test_exercise_flow.py`` fails
until the two agree. The file is in the course repository, never in the wheel
(docs/teaching.md, "Where the solution comes from"): a learner working from a clone gets
each solution after a checked attempt (unless ``WORKBENCH_EXAM`` is set), a self-study
learner with ``pip install`` downloads the file and puts it beside their lessons.
"""

from workbench.teaching import course

if __name__ == "__main__":
    print("wrote", course.write_solutions())
