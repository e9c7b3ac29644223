"""Row models shared by operator outputs (their key names are part of the contract)."""

from __future__ import annotations

from typing import Any

from tgms.engine.operators.base import Model


class NodeVersionRow(Model):
    vid: int
    uid: str
    label: str
    props: dict[str, Any]
    vt_s: int
    vt_e: int
    tt_s: int
    tt_e: int
    source: str | None
    provenance_ref: str | None


class EdgeVersionRow(Model):
    vid: int
    eid: int
    src: str
    dst: str
    rel_type: str
    disc: str
    props: dict[str, Any]
    vt_s: int
    vt_e: int
    tt_s: int
    tt_e: int
    source: str | None
    provenance_ref: str | None


class Step(Model):
    """One traversal or event: ``t`` is the traversal time (paths) or ``vt_s`` (motifs)."""

    vid: int
    eid: int
    src: str
    dst: str
    rel_type: str
    t: int


class EdgeRef(Model):
    vid: int
    eid: int
    src: str
    dst: str
    rel_type: str
    vt_s: int
    vt_e: int
