"""Helpers shared by the store tests (imported relatively: ``from ._support import ...``)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from tgms.engine.canonical import dumps_canonical
from tgms.engine.store import ScanFilter, Store
from tgms.engine.store.digest import row_json

CURRENT = ScanFilter()
EVERY = ScanFilter(all_beliefs=True)


def edge_ref(src: str, dst: str, rel_type: str = "R", disc: str = "") -> dict[str, str]:
    return {"src": src, "dst": dst, "rel_type": rel_type, "disc": disc}


def node_identity(row: dict[str, Any]) -> tuple[str, ...]:
    return ("node", row["uid"])


def edge_identity(row: dict[str, Any]) -> tuple[str, ...]:
    return ("edge", row["src"], row["dst"], row["rel_type"], row["disc"])


def canonical_lines(store: Store, flt: ScanFilter) -> list[str]:
    """Canonical JSON of every row a scan returns (public form: uids, parsed props), sorted."""
    nodes, edges = store.public_rows(flt)
    return sorted([row_json(n, "node") for n in nodes] + [row_json(e, "edge") for e in edges])


def rows_digest(store: Store, flt: ScanFilter) -> str:
    """SHA-256 of the canonical rows of one scan: what 'byte-identical result' is checked against."""
    h = hashlib.sha256()
    for line in canonical_lines(store, flt):
        h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()


def belief(store: Store, flt: ScanFilter = CURRENT) -> set[tuple[Any, ...]]:
    """(identity, vt_s, vt_e, props-json) of every version a scan returns (vids and tt left out)."""
    nodes, edges = store.public_rows(flt)
    out = {(node_identity(n), n["vt_s"], n["vt_e"], dumps_canonical(n["props"])) for n in nodes}
    out |= {(edge_identity(e), e["vt_s"], e["vt_e"], dumps_canonical(e["props"])) for e in edges}
    return out


def disjointness_violations(store: Store) -> list[str]:
    """Invariant 1 over the whole history: at every tt boundary, one identity's beliefs never overlap."""
    nodes, edges = store.public_rows(EVERY)
    rows = [(node_identity(n), n) for n in nodes] + [(edge_identity(e), e) for e in edges]
    boundaries = sorted({r["tt_s"] for _, r in rows} | {r["tt_e"] for _, r in rows})
    by_ident: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for ident, r in rows:
        by_ident[ident].append(r)
    bad = []
    for a in boundaries:
        for ident, versions in by_ident.items():
            live = sorted((v for v in versions if v["tt_s"] <= a < v["tt_e"]), key=lambda v: v["vt_s"])
            for prev, nxt in itertools.pairwise(live):
                if nxt["vt_s"] < prev["vt_e"]:
                    a_iv, b_iv = (prev["vt_s"], prev["vt_e"]), (nxt["vt_s"], nxt["vt_e"])
                    bad.append(f"tt={a} {ident}: {a_iv} overlaps {b_iv}")
    return bad


def log_records(path: Path) -> list[dict[str, Any]]:
    """Every record of an event log, parsed (seal included)."""
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def log_lines(path: Path) -> list[bytes]:
    """The log's lines with their newlines."""
    return path.read_bytes().splitlines(keepends=True)


def dir_fingerprint(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file below ``root`` (directories by presence)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "<dir>"
    return out
