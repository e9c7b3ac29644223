"""The trace viewer: one self-contained HTML page of an answered question (``tgms ask --html``, ``tgms trace
view``).

- :mod:`pipeline.viewer.view`: :class:`TraceView`, what a page shows, and the saved document of ``tgms ask
  --save`` (:func:`ask_document`);
- :mod:`pipeline.viewer.load`: a view from any accepted TRACE.json (saved ask, ``tgms plan run`` output, a
  bare trace), with evidence fetched by digest and claims verified against a store;
- :mod:`pipeline.viewer.page`: the page (question, answer and gate, claims with verdicts, attempts);
  :mod:`pipeline.viewer.dag` draws the plan as inline SVG, :mod:`pipeline.viewer.steps` the per-step table
  and :mod:`pipeline.viewer.evidence` the evidence rows; :mod:`pipeline.viewer.html` holds the escaping
  helpers every module writes through.

No script, no external stylesheet, font or image: the page opens offline and can be attached to a report.
Every stored string is HTML-escaped: graph content is data and must not become markup.
"""

from tgms.pipeline.viewer.load import load_view
from tgms.pipeline.viewer.page import render_page
from tgms.pipeline.viewer.view import TraceView, ask_document, view_from_ask

__all__ = ["TraceView", "ask_document", "load_view", "render_page", "view_from_ask"]
