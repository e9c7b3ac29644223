"""Read a campaign back from MLflow alone: its parent run(s), the cell runs, the mutation and
operator-benchmark runs, and the artifacts the tables need.

``--run-id`` selects one campaign parent and the runs nested under it; ``--experiment`` selects every
campaign parent in the experiment (a ``--multirun`` sweep lands one per job) with their nested runs, plus
mutation and benchmark runs of the experiment that have no parent. Nothing is read from the run
directory: a report can be written on another machine from a tracking server or a copied store.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError, NotFoundError
from tgms.pipeline.campaign.cell_metrics import PAIR_KEYS, compare_cells, system_key
from tgms.pipeline.campaign.tracking import import_mlflow
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.systems.runner import parse_lines
from tgms.pipeline.table import Document, from_json, parse_markdown
from tgms.pipeline.tasks.stats import LABEL as TABLE2_LABEL

PAGE = 1000


@dataclass
class CellRun:
    """One child run: its tags, params and (latest) metrics, and which parent it is under."""

    run_id: str
    parent_id: str
    tags: dict[str, str]
    params: dict[str, str]
    metrics: dict[str, float]
    start_time: int

    def as_cell(self) -> dict[str, Any]:
        return {"tags": self.tags, "metrics": self.metrics}


@dataclass
class ReportData:
    """Everything the report's tables are made of."""

    parents: list[Any]  # mlflow Run objects of kind campaign, oldest first
    cells: list[CellRun]
    comparisons: list[dict[str, Any]]
    mutations: list[dict[str, Any]]  # mutations.json bodies
    ops: list[list[dict[str, Any]]]  # ops_bench.json bodies
    table2: list[Document]  # the parents' distinct logged Table 2 documents
    notes: list[str] = field(default_factory=list)

    def parent_params(self) -> dict[str, str]:
        """The parents' params merged (a sweep's jobs differ only in what they sweep)."""
        out: dict[str, str] = {}
        for p in self.parents:
            out.update(p.data.params)
        return out


class Reader:
    """An MLflow client and the downloads it makes, for one report."""

    def __init__(self, tracking_uri: str) -> None:
        import_mlflow()
        if tracking_uri.startswith("sqlite:///") and not Path(tracking_uri[len("sqlite:///") :]).is_file():
            # MLflow would create an empty store there: reading must not write
            raise NotFoundError(f"no MLflow store at {tracking_uri}", tracking_uri=tracking_uri)
        from mlflow.tracking import MlflowClient

        self.client = MlflowClient(tracking_uri=tracking_uri)
        self._tmp = tempfile.TemporaryDirectory(prefix="tgms-report-")

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def runs(self, experiment_id: str, filter_string: str = "") -> list[Any]:
        out: list[Any] = []
        token = None
        while True:
            page = self.client.search_runs(
                [experiment_id], filter_string=filter_string, max_results=PAGE, page_token=token
            )
            out.extend(page)
            token = page.token
            if not token:
                return sorted(out, key=lambda r: (r.info.start_time or 0, r.info.run_id))

    def artifact(self, run_id: str, path: str) -> str | None:
        """The text of an artifact, or None when the run has none by that path."""
        from mlflow.exceptions import MlflowException

        dst = Path(self._tmp.name) / run_id
        dst.mkdir(exist_ok=True)
        try:
            local = self.client.download_artifacts(run_id, path, str(dst))
        except (MlflowException, OSError):
            return None
        p = Path(local)
        return p.read_text(encoding="utf-8") if p.is_file() else None

    def records(self, run_id: str) -> list[TaskRecord]:
        """A cell run's ``records.jsonl`` artifact, typed (a torn line skipped; a line that is not a
        record is ``E_CORRUPT`` naming the run)."""
        text = self.artifact(run_id, "records.jsonl") or ""
        return parse_lines(text, f"run {run_id}: records.jsonl")

    # -- selection --------------------------------------------------------------------------------------
    def load(self, run_id: str | None = None, experiment: str | None = None) -> ReportData:
        """The report's data for one parent run or one experiment (exactly one of the two)."""
        if (run_id is None) == (experiment is None):
            raise InvalidArgError("give exactly one of --run-id and --experiment")
        if run_id is not None:
            parent = self._parent(run_id)
            exp_id = parent.info.experiment_id
            parents = [parent]
            nested = self.runs(exp_id, f"tags.`mlflow.parentRunId` = '{run_id}'")
        else:
            assert experiment is not None  # exactly one of the two (checked above)
            exp = self.client.get_experiment_by_name(experiment)
            if exp is None:
                raise NotFoundError(f"no MLflow experiment named {experiment!r}", experiment=experiment)
            everything = self.runs(exp.experiment_id)
            parents = [r for r in everything if r.data.tags.get("tgms.kind") == "campaign"]
            ids = {p.info.run_id for p in parents}
            nested = [
                r
                for r in everything
                if r.data.tags.get("mlflow.parentRunId") in ids
                or (
                    r.data.tags.get("tgms.kind") in ("mutations", "ops_bench")
                    and not r.data.tags.get("mlflow.parentRunId")
                )
            ]
        return self._data(parents, nested)

    def _parent(self, run_id: str) -> Any:
        from mlflow.exceptions import MlflowException

        try:
            run = self.client.get_run(run_id)
        except MlflowException as err:
            raise NotFoundError(f"no MLflow run {run_id!r} in this tracking store", run_id=run_id) from err
        kind = run.data.tags.get("tgms.kind")
        if kind != "campaign":
            raise InvalidArgError(
                f"run {run_id} is not a campaign parent run (tgms.kind = {kind!r}); give the parent's id",
                run_id=run_id,
                parent=run.data.tags.get("mlflow.parentRunId"),
            )
        return run

    def _data(self, parents: list[Any], nested: list[Any]) -> ReportData:
        cells_by_id: dict[str, CellRun] = {}
        notes = []
        for r in nested:
            if r.data.tags.get("tgms.kind") != "cell":
                continue
            cell = CellRun(
                r.info.run_id,
                r.data.tags.get("mlflow.parentRunId", ""),
                dict(r.data.tags),
                dict(r.data.params),
                dict(r.data.metrics),
                r.info.start_time or 0,
            )
            key = cell.tags.get("tgms.cell_id", cell.run_id)
            if key in cells_by_id:
                notes.append(
                    f"cell {key}: run {cells_by_id[key].run_id} superseded by the later run {cell.run_id}"
                )
            cells_by_id[key] = cell  # runs come oldest first: the latest wins
        cells = list(cells_by_id.values())
        comparisons = self._comparisons(parents, cells)
        mutations = _distinct(
            json.loads(t) for r in nested if r.data.tags.get("tgms.kind") == "mutations"
            if (t := self.artifact(r.info.run_id, "mutations.json")) is not None
        )  # fmt: skip
        ops = _distinct(
            json.loads(t) for r in nested if r.data.tags.get("tgms.kind") == "ops_bench"
            if (t := self.artifact(r.info.run_id, "ops_bench.json")) is not None
        )  # fmt: skip
        table2 = _distinct(d for p in parents if (d := self._table2(p.info.run_id)) is not None)
        return ReportData(parents, cells, comparisons, mutations, ops, table2, notes)

    def _table2(self, run_id: str) -> Document | None:
        """The parent's Table 2: the logged model (``tables/table2.json``), else, for a run logged before
        the model existed, its ``tables/table2.md`` read back."""
        text = self.artifact(run_id, "tables/table2.json")
        if text is not None:
            model = from_json(text)
            return model if isinstance(model, Document) else Document(name="table2", tables=(model,))
        md = self.artifact(run_id, "tables/table2.md")
        return None if md is None else parse_markdown(md, "table2", TABLE2_LABEL)

    def _comparisons(self, parents: list[Any], cells: list[CellRun]) -> list[dict[str, Any]]:
        """The parents' logged comparisons; pairs whose cells sit under different parents (a sweep with one
        system per job) are computed here from the two cells' ``records.jsonl`` artifacts, the same way."""
        logged: dict[tuple[str, ...], dict[str, Any]] = {}
        for p in parents:
            text = self.artifact(p.info.run_id, "comparisons.json")
            for c in json.loads(text) if text else []:
                logged[_pair_id(c)] = c
        groups: dict[tuple[str, ...], list[CellRun]] = {}
        for c in cells:
            groups.setdefault(tuple(c.tags.get(k, "") for k in PAIR_KEYS), []).append(c)
        out = dict(logged)
        for group, members in groups.items():
            systems = sorted({m.tags.get("tgms.system", "") for m in members}, key=system_key)
            wanted = [(group, a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
            if all((*g, a, b) in out for g, a, b in wanted):
                continue
            computed = compare_cells([(m.tags, self.records(m.run_id)) for m in members])
            for c in computed:
                out.setdefault(_pair_id(c), {**c, "source": "report"})
        return list(out.values())


def _pair_id(c: dict[str, Any]) -> tuple[str, ...]:
    return (str(c["suite"]), str(c["model"]), str(c["seed"]), str(c["ablation"]), str(c["a"]), str(c["b"]))


def _distinct(items: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out
