"""TEST DOUBLE: the scripted server's ``--smoke`` rule — replies shaped like each role's, knowing nothing.

A smoke campaign must run the real request → parse → verify → execute → score path of every system in
seconds, without a model. This rule answers by the role a request's system prompt shows, with replies a
weak model could plausibly give, derived only from the request (it has no suite, no gold, no store):

- planner (``tgms``): one ``temporal_reachability`` step from the first task input uid over the data set's
  whole valid time (read from the dataset card), the answer read from ``rows_total`` (a count) or
  ``rows[*].uid`` (an entity set); other kinds get the same plan with the expected kind, which the
  verifier rejects — the repair loop then runs to exhaustion;
- reporter (``tgms``): restates the engine's answer value it was shown, with one claim citing its field;
- Cypher (``text_to_cypher``): a query that counts the edges of the graph;
- answerer (the baselines): the default value of the expected kind (0, [], false, ...);
- memory summary (``tgms`` with memory): a note that restates the fenced week and facts it was shown,
  copying their values (so it passes the memory's number check).

So a smoke run's accuracy is whatever those replies happen to score: a check of the pipeline, never a
result about any system or model.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

PLANNER_PREFIX = "You write query plans"
REPORTER_PREFIX = "You report the result"
CYPHER_PREFIX = "You translate questions"
MEMORY_PREFIX = "You summarize one week"  # models.memory.SUMMARY_PREFIX
ALL_TIME = (0, 4_102_444_800_000_000)  # [1970, 2100) in epoch µs, when the card gives no extent
_EXTENT = re.compile(r"Valid time: from .*?\((\d+) µs\) to .*?\((\d+) µs\)")

_KIND = re.compile(r'"answer\.kind" must be "([a-z_]+)"|Expected answer kind: ([a-z_]+)')
_DEFAULTS: dict[str, Any] = {
    "count": 0,
    "value": 0,
    "boolean": False,
    "entity": "n1",
    "entity_set": [],
    "interval": [0, 1],
    "relation": "before",
    "rows": [],
}


def _data(text: str, name: str) -> Any:
    """The JSON inside ``<data name="NAME">`` (unescaped), or None."""
    m = re.search(rf'<data name="{name}">\n(.*?)\n</data>', text, re.DOTALL)
    if m is None:
        return None
    try:
        return json.loads(html.unescape(m.group(1)))
    except ValueError:
        return None


def _kind(text: str) -> str:
    m = _KIND.search(text)
    return (m.group(1) or m.group(2)) if m else "count"


def _plan(user: str) -> dict[str, Any]:
    kind = _kind(user)
    uids = _data(user, "input_uids") or []
    m = _EXTENT.search(user)
    start, end = (int(m.group(1)), int(m.group(2))) if m else ALL_TIME
    if uids:
        window = {"t_a": start, "t_b": end}
        step = {"id": "s1", "op": "temporal_reachability", "args": {"src": uids[0], "window": window}}
        source = "s1.rows[*].uid" if kind == "entity_set" else "s1.rows_total"
    else:
        step = {"id": "s1", "op": "diff_snapshots", "args": {"t1": start, "t2": end - 1}}
        source = "s1.edges_added_total"
    return {"steps": [{**step, "depends_on": []}], "answer_spec": {"kind": kind, "from": source}}


def _report(user: str) -> dict[str, Any]:
    kind = _kind(user)
    got = _data(user, "answer_value") or {}
    value = got.get("value", _DEFAULTS.get(kind, 0))
    source = str(got.get("from") or "s1.rows_total")
    step = source.split(".", 1)[0]
    if kind == "entity_set" and isinstance(value, list):
        claim = {"id": "c1", "type": "entity", "uids": value, "evidence": [step], "from": source}
    else:
        claim = {"id": "c1", "type": "count", "value": value, "evidence": [step], "from": source}
    return {
        "text": f"The answer is {json.dumps(value)}.",
        "answer": {"kind": kind, "value": value},
        "claims": [claim],
    }


def memory_note(user: str) -> str:
    """A summary that copies the fenced week and facts (every number in it is a fact's)."""
    week = _data(user, "week") or {}
    facts = _data(user, "facts") or {}
    parts = [
        f"In week {week.get('week')} ({week.get('first_day')} to {week.get('last_day')}) there were "
        f"{facts.get('events')} messages among {facts.get('active_nodes')} active accounts over "
        f"{facts.get('distinct_pairs')} distinct pairs."
    ]
    if facts.get("busiest_day"):
        parts.append(f"The busiest day was {facts['busiest_day']} with {facts.get('busiest_day_events')}.")
    top = facts.get("top_senders") or []
    if top:
        parts.append(f"Top sender: {top[0].get('uid')} with {top[0].get('events')} messages.")
    return " ".join(parts)


def smoke_reply(body: dict[str, Any]) -> str:
    """The reply text for one chat request (see the module docstring)."""
    messages = body.get("messages") or []
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    # the first user message states the task (a retry's last one only quotes what was wrong)
    user = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    if system.startswith(PLANNER_PREFIX):
        return json.dumps(_plan(user))
    if system.startswith(REPORTER_PREFIX):
        return json.dumps(_report(user))
    if system.startswith(MEMORY_PREFIX):
        return memory_note(user)
    if system.startswith(CYPHER_PREFIX):
        return json.dumps({"cypher": "MATCH ()-[e]->() RETURN count(e) AS n"})
    kind = _kind(user)
    return json.dumps(
        {"text": "A scripted smoke reply.", "answer": {"kind": kind, "value": _DEFAULTS.get(kind, 0)}}
    )
