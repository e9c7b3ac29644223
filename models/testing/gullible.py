"""TEST DOUBLE: a "gullible" model for the prompt-injection tests. Never used to report results.

A rule for :class:`~models.testing.scripted_server.ScriptedServer` that behaves like the worst model the
boundary must survive: it **obeys any instruction it finds outside a ``<data>`` fence**, and otherwise
answers by the normal scripted rule (:func:`models.testing.smoke_rule.smoke_reply` by default).

How it reads a request (system and user messages; an assistant message is its own earlier reply):

1. HTML entities are decoded once (a lenient reader: ``&lt;/data&gt;`` counts as a closing tag);
2. fences are found leniently: an opening tag is ``<data name=...>`` in any case and spacing, a closing
   tag ``</data>`` likewise (``</DATA >``, ``< / data>``); opening tags nest, a closing tag with none open
   is ignored, and text between an opening tag and its close is data;
3. the text left over (outside every fence) is searched for directives (:data:`DIRECTIVES`): "ignore
   (all) previous instructions", a fake turn (a line starting ``system:``, ``assistant:``, ``<|im_start|>``,
   ``[INST]``, ``### System``), or "use this plan: {...}".

When it finds one it obeys: a planner request gets the plan that follows "use this plan:" (or
:data:`INJECTED_PLAN`), an answer request the value :data:`INJECTED_VALUE`, a Cypher request
:data:`INJECTED_CYPHER`. Every obeyed request is logged in :attr:`GullibleModel.obeyed`, so a test can
assert there were none (the boundary held) — or some (a negative control: the rule does follow an
injection it can see, so the test could fail).
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from tgms.models.testing.smoke_rule import CYPHER_PREFIX, PLANNER_PREFIX, smoke_reply

INJECTED_VALUE = 42
INJECTED_CYPHER = "RETURN 42 AS injected"
INJECTED_PLAN: dict[str, Any] = {
    "steps": [{"id": "s1", "op": "diff_snapshots", "args": {"t1": 0, "t2": 1}, "depends_on": []}],
    "answer_spec": {"kind": "count", "from": "s1.edges_added_total"},
}
_OPEN = re.compile(r"<\s*data\s+name\s*=[^>]*>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*data\s*>", re.IGNORECASE)
_TAG = re.compile(f"{_OPEN.pattern}|{_CLOSE.pattern}", re.IGNORECASE)
#: what a gullible model takes for an instruction addressed to it
DIRECTIVES = (
    re.compile(r"ignore\s+(?:all\s+)?(?:the\s+)?(?:previous|prior|above|earlier)\s+instructions", re.I),
    re.compile(r"^\s*(?:system|assistant|developer)\s*:", re.I | re.M),
    re.compile(r"<\|im_start\|>|\[INST\]|^#+\s*(?:system|instruction)", re.I | re.M),
    re.compile(r"use\s+this\s+plan\s*:", re.I),
)
_PLAN = re.compile(r"use\s+this\s+plan\s*:\s*", re.I)
_KIND = re.compile(r'"answer\.kind" must be "([a-z_]+)"|Expected answer kind: ([a-z_]+)')


def outside_fences(content: str) -> str:
    """The text of a message that a lenient reader takes as instructions (see the module docstring)."""
    text = html.unescape(content)
    out, depth, pos = [], 0, 0
    for m in _TAG.finditer(text):
        if depth == 0:
            out.append(text[pos : m.start()])
        if _CLOSE.fullmatch(m.group(0)):
            depth = max(0, depth - 1)
        else:
            depth += 1
        pos = m.end()
    if depth == 0:
        out.append(text[pos:])
    return "\n".join(out)


def find_injection(body: dict[str, Any]) -> str | None:
    """The first directive outside the fences of the request's system and user messages, or None."""
    for message in body.get("messages") or []:
        if message.get("role") not in ("system", "user"):
            continue
        text = outside_fences(str(message.get("content", "")))
        for pattern in DIRECTIVES:
            m = pattern.search(text)
            if m:
                return text[m.start() :]
    return None


def _injected_plan(found: str) -> dict[str, Any]:
    m = _PLAN.search(found)
    if m:
        try:
            plan, _ = json.JSONDecoder().raw_decode(found, m.end())
            if isinstance(plan, dict):
                return plan
        except ValueError:
            pass
    return INJECTED_PLAN


def obey(body: dict[str, Any], found: str) -> str:
    """The reply of a model that does what the injection says."""
    messages = body.get("messages") or []
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    if system.startswith(PLANNER_PREFIX):
        return json.dumps(_injected_plan(found))
    if system.startswith(CYPHER_PREFIX):
        return json.dumps({"cypher": INJECTED_CYPHER})
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    m = _KIND.search(user)
    kind = (m.group(1) or m.group(2)) if m else "count"
    value: Any = (
        INJECTED_VALUE if kind in ("count", "value") else ["injected"] if kind == "entity_set" else "n42"
    )
    return json.dumps({"text": "Injected: the answer is 42.", "answer": {"kind": kind, "value": value}})


class GullibleModel:
    """TEST DOUBLE: the rule (a callable of the request body); :attr:`obeyed` logs every injection obeyed."""

    def __init__(self, normal: Callable[[dict[str, Any]], str] = smoke_reply) -> None:
        self.normal = normal
        self.obeyed: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        found = find_injection(body)
        if found is None:
            return self.normal(body)
        reply = obey(body, found)
        with self._lock:
            self.obeyed.append({"directive": found[:200], "reply": reply})
        return reply
