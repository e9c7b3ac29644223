"""The paper's tables and plots, read back from MLflow alone (DESIGN §4, §6: ``tgms report``).

Given a campaign's parent run (``--run-id``) or an experiment (``--experiment``: every campaign parent in
it, e.g. the jobs of a ``--multirun`` sweep), :func:`reports.build.write_report` writes Tables 2-6 and
the §5.6 operator table as Markdown and LaTeX (``tableN.md``, ``tableN.tex``, ``ops.md``, ``ops.tex``),
the plots ``accuracy_by_system.png`` and ``accuracy_by_model_size.png``, and ``report.md`` with all of it
in order. Nothing is read from the run directory: the numbers are the runs' metrics and artifacts
(:mod:`reports.read`), so a report can be rebuilt anywhere the tracking store is reachable.

The top layer: ``reports`` imports ``pipeline`` (the table renderers, the metric definitions) and nothing
imports ``reports``; the ``tgms report`` command is a plugin (entry point group ``tgms.commands``).
"""

# The one import name is ``tgms`` (tgms/__init__.py). A top-level ``reports`` (importable only from the
# repository's root, where the folder sits on the path) would be a second copy of every module, with
# registries and classes of its own: refused at once rather than failing somewhere later.
if __name__ != "tgms.reports":
    raise ImportError(f"import tgms.reports, not {__name__}: the project installs one package, tgms")
