"""nbgrader's feedback pages, as a learner can read them: offline, messages whole.

nbgrader writes each learner's feedback as an HTML page from its ``feedback``
template, which loads MathJax from a CDN. The template here (``workbench_feedback/``)
is nbgrader's with that one macro replaced by nothing, so the page needs no network
(formulas show as their TeX source). An error output is preformatted text that does
not wrap: the checker's messages come in lines of at most 88 characters, broken at
spaces (:func:`workbench.exercises.report.wrapped`). In the course's
``nbgrader_config.py``::

    from workbench.exercises.feedback import use_readable_feedback
    use_readable_feedback(c)
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATE = "workbench_feedback"


def nbgrader_templates() -> Path:
    """Where nbgrader keeps its own templates (``feedback/`` among them)."""
    import nbgrader

    return Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"


def use_readable_feedback(config) -> None:
    """Set nbgrader's HTML exporter to the course's feedback template.

    ``config`` is the ``c`` of an ``nbgrader_config.py``. nbgrader adds its own
    template folder only when none is configured, so both are named here.
    """
    config.HTMLExporter.template_name = TEMPLATE
    config.HTMLExporter.extra_template_basedirs = [str(HERE), str(nbgrader_templates())]
