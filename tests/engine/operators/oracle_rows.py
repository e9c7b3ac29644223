"""Hand-built version rows and a runner for the oracle tests (test_oracles*.py)."""

from __future__ import annotations

import itertools
from typing import Any

from tgms.engine.operators.oracle import ORACLES, OracleStore
from tgms.engine.timeutil import OPEN_END

OE = OPEN_END
W100 = {"t_a": 0, "t_b": 100}
_VIDS = itertools.count(500_000)


def node(uid: str, vt_s: int = 0, vt_e: int = OE, *, vid: int | None = None, label: str = "user",
         props: dict | None = None, tt_s: int = 0, tt_e: int = OE) -> dict[str, Any]:  # fmt: skip
    return {"vid": vid if vid is not None else next(_VIDS), "uid": uid,
            "label": label, "props": props or {}, "vt_s": vt_s, "vt_e": vt_e, "tt_s": tt_s, "tt_e": tt_e,
            "source": None, "provenance_ref": None}  # fmt: skip


def edge(src: str, dst: str, vt_s: int, vt_e: int | None = None, *, eid: int, vid: int, rel: str = "msg",
         props: dict | None = None, tt_s: int = 0, tt_e: int = OE) -> dict[str, Any]:  # fmt: skip
    return {"vid": vid, "eid": eid, "src": src, "dst": dst, "rel_type": rel, "disc": "", "props": props or {},
            "vt_s": vt_s, "vt_e": vt_s + 1 if vt_e is None else vt_e, "tt_s": tt_s, "tt_e": tt_e,
            "source": None, "provenance_ref": None}  # fmt: skip


def events(*triples: tuple[str, str, int], start_eid: int = 1) -> list[dict[str, Any]]:
    """Instantaneous events; eid per (src, dst) pair in order of first use, vid = position."""
    eids: dict[tuple[str, str], int] = {}
    out = []
    for i, (s, d, t) in enumerate(triples):
        eid = eids.setdefault((s, d), start_eid + len(eids))
        out.append(edge(s, d, t, eid=eid, vid=1000 + i))
    return out


def store_of(edges: list[dict[str, Any]], extra_nodes: list[dict[str, Any]] | None = None) -> OracleStore:
    uids = sorted({e["src"] for e in edges} | {e["dst"] for e in edges})
    return OracleStore([node(u) for u in uids] + (extra_nodes or []), edges)


def run(op: str, store: OracleStore, **args: Any) -> dict[str, Any]:
    return ORACLES[op](store, args)
