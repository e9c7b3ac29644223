"""The analyst question set's machinery: load the questions, build a dataset's store, answer a question
twice (its SQL over the raw file; its plan through the real verifier and executor) and compare.

Shared by ``test_questions.py`` and the coverage report (``python -m tests.analyst.coverage``), so the
report measures exactly what the test checks. Imports ``engine.api``, and the canonical clock
and the synthetic generator from their own modules (tests may reach past the front door).

Seven sets (:data:`SETS`): ``first`` (``questions.yaml``: CollegeMsg and bitcoin-otc, issue 17),
``second`` (issue 27: email-Eu and the synthetic data, one file each), ``third`` (CollegeMsg and
bitcoin-otc again, 30 new questions), ``fourth`` (email-Eu and the synthetic data again, 30 new) and
``fifth``, ``sixth`` and ``seventh`` (all four data sets again, new questions each time; the seventh's
synthetic data another seed and size, source ``synthetic_s13``), the last six written question and SQL
first and plans after. A set's files are merged into one spec
(``sources``, ``corrections``, ``questions``).

Conventions (also stated at the top of ``questions.yaml``):

- ``{events}`` in a question's SQL expands to the dataset's ``events_sql``: a ``read_csv`` of the raw file
  (``{path}``) with node ids turned into store uids (``'n' || id``), times into µs (``t``) and a UTC
  ``TIMESTAMP`` (``ts``). ``{corrections}`` expands to a ``read_json`` of the documented corrections
  (the ``corrections`` table of the YAML, one row per op) written next to the store.
- Belief-history questions (``store: corrected``) run on a store to which those corrections were applied,
  one batch each, after the load (canonical clock: the load at ``CANONICAL_BASE``, batch k at
  ``CANONICAL_BASE + k * CANONICAL_STEP``); every other question runs on the plain store.
- A source with ``generate`` is the seeded synthetic generator's data (``{nodes, events, seed}``, no
  correction epoch): its ``msg`` and ``follows`` frames are written once per process as CSV files
  (:func:`synthetic_files`: seconds, integer node ids, the props as columns) that the SQL reads, and the
  store is built from the same generator call. Its uids are ``s<k>`` (``uid_prefix: s``).
- ``tables`` of a source add more ``{name}`` placeholders (e.g. ``{follows}``), each a ``file`` and ``sql``.
- A ``TIMESTAMP`` in an SQL answer (the events' ``ts``, a ``make_timestamp``) is the instant it names, as the
  store holds times: µs since 1970-01-01 UTC (how a reporter writes it out is not what is checked).
- Answers compare exactly; numbers to 9 decimals (a difference of at most one unit in the 9th decimal is
  accepted, because the SQL's double mean and the engine's exactly rounded Fraction may round apart).
"""

from __future__ import annotations

import atexit
import csv
import json
import re
import shutil
import tempfile
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import SHARED_DATA
from tgms.engine.api import (
    OPEN_END,
    ExecConfig,
    MemoryResults,
    OpContext,
    Store,
    VerifierConfig,
    build_plan,
    build_store,
    execute,
    operator_schemas,
    verify_plan,
)
from tgms.engine.ingest.synthetic import generate as generate_synthetic
from tgms.engine.store.clock import CANONICAL_BASE, CANONICAL_STEP

HERE = Path(__file__).resolve().parent
QUESTIONS_PATH = HERE / "questions.yaml"
#: the question sets, each one or more YAML files merged into one spec
SETS: dict[str, tuple[str, ...]] = {
    "first": ("questions.yaml",),
    "second": ("questions_email_eu.yaml", "questions_synthetic.yaml"),
    "third": ("questions_third_collegemsg.yaml", "questions_third_bitcoin.yaml"),
    "fourth": ("questions_fourth_email_eu.yaml", "questions_fourth_synthetic.yaml"),
    "fifth": (
        "questions_fifth_collegemsg.yaml",
        "questions_fifth_bitcoin.yaml",
        "questions_fifth_email_eu.yaml",
        "questions_fifth_synthetic.yaml",
    ),
    "sixth": (
        "questions_sixth_collegemsg.yaml",
        "questions_sixth_bitcoin.yaml",
        "questions_sixth_email_eu.yaml",
        "questions_sixth_synthetic.yaml",
    ),
    "seventh": (
        "questions_seventh_collegemsg.yaml",
        "questions_seventh_bitcoin.yaml",
        "questions_seventh_email_eu.yaml",
        "questions_seventh_synthetic.yaml",
    ),
}
DATA_DIR = SHARED_DATA  # ../shared/data, or TGMS_SHARED_DATA
ANSWER_KINDS = ("int", "float", "value", "uid", "uid_list", "ordered_list", "table", "table_set")
CLASSES = (
    "grouped_aggregation",
    "property_predicate",
    "join",
    "sequence",
    "calendar",
    "self_loop",
    "belief_history",
    "co_active_gap",
    "longest_path",
    "listing",
    "paper_template",
    "valid_time",
)


def data_file(name: str) -> Path:
    """A raw data file of the questions: ``../shared/data/<name>``, or for CollegeMsg, when ``../shared`` is
    absent, the gzipped copy the package ships (the same bytes once decompressed; the store's loader and
    DuckDB's ``read_csv`` both read ``.gz``)."""
    path = DATA_DIR / name
    if not path.is_file() and name == "CollegeMsg.txt":
        from tgms.engine.ingest.snap import packaged_collegemsg

        return packaged_collegemsg()
    return path


def load_questions(path: Path = QUESTIONS_PATH) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def load_set(name: str = "all") -> dict[str, Any]:
    """The spec of set ``name`` (``first`` … ``fourth``, or ``all``): its files merged; each question
    carries its set's name under ``set``. A source or correction list given twice must be the same; a
    question id given twice is an error."""
    names = list(SETS) if name == "all" else [name]
    merged: dict[str, Any] = {"sources": {}, "corrections": {}, "questions": []}
    seen: set[str] = set()
    for set_name in names:
        for file in SETS[set_name]:
            spec = load_questions(HERE / file)
            for key in ("sources", "corrections"):
                for k, v in (spec.get(key) or {}).items():
                    if k in merged[key] and merged[key][k] != v:
                        raise ValueError(f"{file}: {key} {k!r} is given twice, differently")
                    merged[key][k] = v
            for q in spec.get("questions") or []:
                if q["id"] in seen:
                    raise ValueError(f"{file}: question id {q['id']!r} is given twice")
                seen.add(q["id"])
                merged["questions"].append(dict(q, set=set_name))
    return merged


_SYNTHETIC: dict[str, Path] = {}


def synthetic_files(gen: dict[str, Any]) -> Path:
    """The directory holding ``synthetic-msg.csv`` (``src,dst,t,w``) and ``synthetic-follows.csv``
    (``src,dst,t,t_end,strength``; ``t_end`` empty when open) of ``generate(nodes, events, seed)`` without
    corrections: seconds, node ids as integers (``s17`` -> 17). Written once per process, removed at exit."""
    key = json.dumps(gen, sort_keys=True)
    if key not in _SYNTHETIC:
        out = Path(tempfile.mkdtemp(prefix="tgms-analyst-synthetic-"))
        atexit.register(shutil.rmtree, out, True)
        data = generate_synthetic(gen["nodes"], gen["events"], gen["seed"])
        for frame in data.frames:
            prop = "w" if frame.rel_type == "msg" else "strength"
            with (out / f"synthetic-{frame.rel_type}.csv").open("w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh)
                w.writerow(["src", "dst", "t", *(["t_end"] if frame.rel_type != "msg" else []), prop])
                for r in frame.table.to_pylist():
                    row = [int(r["src"][1:]), int(r["dst"][1:]), r["t"] // 1_000_000]
                    if frame.rel_type != "msg":
                        end = r["t_end"]
                        row.append("" if end is None or end >= OPEN_END else end // 1_000_000)
                    row.append(json.loads(r["props"])[prop])
                    w.writerow(row)
        _SYNTHETIC[key] = out
    return _SYNTHETIC[key]


def source_file(src: dict[str, Any], file: str) -> Path:
    """A source's raw file: generated for a ``generate`` source, else :func:`data_file`."""
    return synthetic_files(src["generate"]) / file if "generate" in src else data_file(file)


# ---- stores ---------------------------------------------------------------------------------------------
def correction_ops(row: dict[str, Any], rel_type: str) -> dict[str, Any]:
    """The store op of one documented correction row (times in the row are unix seconds, as in the file)."""
    t = row["t"] * 1_000_000
    ref = {"src": f"n{row['src']}", "dst": f"n{row['dst']}", "rel_type": rel_type, "disc": ""}
    props = {"rating": row["rating"]} if row.get("rating") is not None else {}
    if row["kind"] == "correct":
        return {"op": "correct", "ref": ref, "props": props, "vt_s": t, "vt_e": t + 1}
    if row["kind"] == "retract":
        return {"op": "retract", "ref": ref, "t": t}
    if row["kind"] == "assert":
        return {
            "op": "assert_edge", "src": ref["src"], "dst": ref["dst"], "rel_type": rel_type,
            "props": props, "vt_s": t, "vt_e": t + 1,
        }  # fmt: skip
    raise ValueError(f"unknown correction kind {row['kind']!r}")


def build(dataset: str, root: Path, spec: dict[str, Any], corrected: bool, backend: str) -> Store:
    """The store of ``dataset`` at ``root`` (canonical clock); with ``corrected``, the documented
    corrections written after the load, one batch per ``batch`` number, and their table at
    ``root/corrections.json`` for the SQL."""
    src = spec["sources"][dataset]
    if "generate" in src:
        gen = src["generate"]
        store = build_store(
            "synthetic", root / "store", backend, events=gen["events"], nodes=gen["nodes"], seed=gen["seed"],
            corrections=False,
        )  # fmt: skip
    else:
        store = build_store(dataset, root / "store", backend, source=data_file(src["file"]))
    if corrected:
        rows = spec["corrections"][dataset]
        batches: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            batches.setdefault(r["batch"], []).append(correction_ops(r, src["rel_type"]))
        for k in sorted(batches):
            res = store.write(batches[k], batch_id=f"analyst-cleanup-{k}")
            assert res.status == "committed", res
            assert res.tt == CANONICAL_BASE + k * CANONICAL_STEP, res  # the tt the questions name
        (root / "corrections.json").write_text(json.dumps(rows), encoding="utf-8")
    return store


def sql_text(q: dict[str, Any], spec: dict[str, Any], root: Path | None) -> str:
    src = spec["sources"][q["dataset"]]
    events = src["events_sql"].replace("{path}", str(source_file(src, src["file"])))
    sql = q["sql"].replace("{events}", f"({events})")
    for name, table in (src.get("tables") or {}).items():
        text = table["sql"].replace("{path}", str(source_file(src, table["file"])))
        sql = sql.replace("{" + name + "}", f"({text})")
    if "{corrections}" in sql:
        assert root is not None, "a question reading {corrections} needs the corrected store"
        sql = sql.replace("{corrections}", f"read_json('{root / 'corrections.json'}')")
    return sql


# ---- the two answers ------------------------------------------------------------------------------------
_EPOCH = datetime(1970, 1, 1)


def _plain(v: Any) -> Any:
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    if isinstance(v, datetime):  # a UTC TIMESTAMP (naive, as the events' ts): the instant, as µs
        return (v - _EPOCH) // timedelta(microseconds=1)
    return v


def sql_answer(con: Any, q: dict[str, Any], spec: dict[str, Any], root: Path | None) -> Any:
    """The oracle: the question's SQL over the raw file, shaped by ``answer_kind``."""
    rows = [tuple(_plain(v) for v in r) for r in con.sql(sql_text(q, spec, root)).fetchall()]
    kind = q["answer_kind"]
    if kind in ("int", "float", "value", "uid"):
        assert len(rows) == 1 and len(rows[0]) == 1, f"{q['id']}: the SQL must give one value, got {rows}"
        return rows[0][0]
    if kind == "uid_list":
        return sorted({r[0] for r in rows})
    if kind == "ordered_list":
        return [r[0] for r in rows]
    if kind == "table":
        return [list(r) for r in rows]
    if kind == "table_set":
        return sorted([list(r) for r in rows], key=json.dumps)
    raise ValueError(kind)


def _path(obj: Any, dotted: str) -> Any:
    """A row's field: a flat key as named (an aggregate row's ``prop.rating``), else a dotted path into an
    edge-version row (``props.rating``); None when absent."""
    if isinstance(obj, dict) and dotted in obj:
        return obj[dotted]
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return obj


def plan_answer(value: Any, q: dict[str, Any]) -> Any:
    """The plan's answer value (``answer_spec.from``), shaped like :func:`sql_answer`."""
    kind = q["answer_kind"]
    if kind in ("int", "float", "value", "uid"):
        return value
    if kind == "uid_list":
        return sorted({v["uid"] if isinstance(v, dict) else v for v in value})
    if kind == "ordered_list":
        return list(value)
    rows = [[_path(r, f) for f in q["answer_fields"]] for r in value]
    return sorted(rows, key=json.dumps) if kind == "table_set" else rows


def same(a: Any, b: Any) -> bool:
    """Exact equality; numbers to 9 decimals (within one unit of the 9th decimal)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float, Fraction)) and isinstance(b, (int, float, Fraction)):
        return abs(round(float(a), 9) - round(float(b), 9)) <= 1.01e-9
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def task_uids(question: str, prefix: str = "n") -> frozenset[str]:
    """The uids a person names in the question: every integer, as a uid (``user 9`` -> ``n9``; the
    synthetic data's ``user 9`` -> ``s9`` with ``prefix="s"``)."""
    return frozenset(f"{prefix}{d}" for d in re.findall(r"\d+", question))


def run_plan(q: dict[str, Any], store: Store, uid_prefix: str = "n") -> dict[str, Any]:
    """Verify and execute the plan as ``tgms plan run`` does; ``{violations, status, answer, error}``."""
    raw = dict(q["plan"], question=q["question"])
    raw.setdefault("plan_id", q["id"])
    ctx = OpContext(store)
    report = verify_plan(raw, ctx, VerifierConfig(task_uids=task_uids(q["question"], uid_prefix)))
    out: dict[str, Any] = {"violations": [v.to_dict() for v in report.violations]}
    if not report.valid:
        return out
    trace = execute(build_plan(raw), ctx, MemoryResults(), ExecConfig())
    out["status"] = trace.status
    out["steps"] = [{"id": r.id, "status": r.status, "error": r.error} for r in trace.steps]
    got = trace.answer() or {}
    out["from"] = got.get("from")
    out["truncated"] = got.get("truncated")  # the answer list is a page (a top 5), or rests on a cut one
    answer_step = trace.record(str(got.get("from", "")).split(".")[0])
    # the answer's step read a list some producer's page cut (a ref list in a where is one page)
    out["tainted"] = bool(answer_step is not None and answer_step.upstream_truncated)
    if "value" in got:
        out["answer"] = plan_answer(got["value"], q)
    else:
        out["error"] = got.get("error")
    return out


# ---- what a plan needs of the engine --------------------------------------------------------------------
def _schemas() -> dict[str, Any]:
    return operator_schemas()


def missing_capabilities(plan: dict[str, Any], schemas: dict[str, Any] | None = None) -> list[str]:
    """What the plan uses that this engine does not declare: an unregistered operator, a compute ``fn``
    outside compute's enum, an argument name outside an operator's args schema (e.g. co_active ``gap``)."""
    schemas = schemas if schemas is not None else _schemas()
    missing: list[str] = []
    for step in plan["steps"]:
        op = step["op"]
        if op not in schemas:
            missing.append(f"operator {op}")
            continue
        props = schemas[op]["args"].get("properties", {})
        for name in step.get("args", {}):
            if name not in props:
                missing.append(f"{op} argument {name}")
        fn = step.get("args", {}).get("fn")
        if op == "compute" and isinstance(fn, str) and fn not in props.get("fn", {}).get("enum", [fn]):
            missing.append(f"compute fn {fn}")
    return sorted(set(missing))
