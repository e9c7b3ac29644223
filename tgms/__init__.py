"""TGMS: one import package over the project's four top-level folders.

``tgms.engine`` (the bi-temporal store, operators, plans and claims), ``tgms.models`` (model endpoints and
local servers), ``tgms.pipeline`` (tasks, systems, the campaign, benchmarks, the command line) and
``tgms.reports`` (the paper's tables from MLflow). The folders keep their places at the repository's top
(``engine/``, ``models/``, ``pipeline/``, ``reports/``); ``tgms/`` holds a link to each, so the source tree,
the wheel, mypy and import-linter all see the same module names. Installing puts only ``tgms`` on the
import path, so a user's own ``models`` or ``pipeline`` package cannot collide with ours.
"""
