"""MLflow tracking of a campaign (DESIGN §4): one parent run, one nested child run per cell, and the
mutations and operator-benchmark runs, in a SQLite store in the run directory by default.

Every call goes through :class:`mlflow.tracking.MlflowClient` with an explicit run id — never the global
active run of ``mlflow.start_run``, which is per thread and would mix up cells finishing on the driver's
threads. Calls are serialized by a lock: one SQLite store takes one writer at a time anyway, and the lock
turns "database is locked" retries into an orderly queue.

Resuming: :meth:`CampaignTracker.start_campaign` and :meth:`~CampaignTracker.start_cell` look up the run by
its ``tgms.campaign_id`` / ``tgms.cell_id`` tag first, so a rerun of a killed campaign continues its runs
instead of adding a second parent or a duplicate child. MLflow params are write-once: a resumed run
re-logs only the params it lacks; a param whose value changed is a ``ConflictError`` (the rerun is not
the same campaign) unless it is operational (:data:`RESUME_MUTABLE`: where it runs, not what it computes),
in which case the first value stays. The driver's parent run leaves that check to its campaign id
(``start_campaign(check_params=False)``): the id hashes what the campaign computes, so every param that
differs under it is operational. Metrics are logged again with the final numbers (the latest value is
the one MLflow shows); artifacts of the same name are replaced.

The contract (tag, metric and artifact names) is in the lead's brief and ``docs/``; the numbers come from
:mod:`pipeline.campaign.cell_metrics`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tgms.engine.api import ConflictError, InvalidArgError, NotFoundError, canonical_json
from tgms.pipeline.campaign.bundle import Manifest
from tgms.pipeline.campaign.cell_metrics import cell_metrics, compare_cells, comparison_metrics, metric_key
from tgms.pipeline.scoring.suite import Suite
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.table import Document, Table, to_latex, to_markdown

MAX_PARAM_VALUE = 6000  # MLflow's limit on a param value (characters)
MAX_KEY = 250  # MLflow's limit on a param / tag key
MAX_TAG_VALUE = 8000
PARAMS_PER_BATCH = 100  # log_batch: at most 100 params + tags
METRICS_PER_BATCH = 1000  # log_batch: at most 1000 metrics
#: flattened-config prefixes that may differ on a resumed campaign: where and how it runs, not what it
#: computes (a rerun on another Ray cluster, with resume switched on, is still the same campaign)
RESUME_MUTABLE = ("run.", "cluster.", "tracking.", "hydra.")
STATUSES = ("RUNNING", "FINISHED", "FAILED", "KILLED")
#: the experiment tag that opens MLflow 3's UI on its runs table ("Model training") instead of the GenAI
#: traces overview, which shows a campaign as empty charts
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
DB_NAME = "mlflow.db"
ARTIFACTS_DIR = "mlruns"


def import_mlflow() -> Any:
    """The ``mlflow`` module; ``E_INVALID_ARG`` naming the ``campaign`` extra when it is not installed."""
    try:
        import mlflow
    except ImportError as err:
        raise InvalidArgError(
            'campaign tracking needs MLflow: pip install -e ".[campaign]"', missing="mlflow"
        ) from err
    return mlflow


def default_uri(run_dir: str | Path) -> str:
    """The SQLite tracking store of a run directory: ``sqlite:///<abs run_dir>/mlflow.db``."""
    return f"sqlite:///{Path(run_dir).resolve() / DB_NAME}"


def default_artifact_location(run_dir: str | Path) -> str:
    """Where the runs' artifacts go: ``file://<abs run_dir>/mlruns`` (MLflow would otherwise use the cwd)."""
    return (Path(run_dir).resolve() / ARTIFACTS_DIR).as_uri()


def git_revision(path: str | Path | None = None) -> str:
    """The short commit of the source tree (``<sha>-dirty`` with uncommitted changes to tracked files);
    ``"unknown"`` outside a git checkout or without git."""
    cwd = Path(path) if path is not None else Path(__file__).resolve().parent

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20, check=True)
        return out.stdout.strip()

    try:
        sha = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


def git_commit(path: str | Path | None = None) -> str | None:
    """The full commit of the source tree (MLflow's ``mlflow.source.git.commit``, shown in its UI), or
    None outside a git checkout."""
    cwd = Path(path) if path is not None else Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=20, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def bundle_tags(suite: str, manifest: Manifest) -> dict[str, str]:
    """The parent run's tags of one suite's bundle: ``tgms.store_digest.<suite>``,
    ``tgms.suite_sha256.<suite>``, ``tgms.test_sha256.<suite>`` (from its ``manifest.json``)."""
    return {
        f"tgms.store_digest.{suite}": manifest.store_digest,
        f"tgms.suite_sha256.{suite}": manifest.suite_sha256,
        f"tgms.test_sha256.{suite}": manifest.test_sha256,
    }


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested dicts as ``a.b.c`` keys with string values (lists and scalars as JSON, strings as is),
    each value cut to MLflow's 6000 characters."""
    out: dict[str, str] = {}
    for k, v in value.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flatten(v, key + "."))
        else:
            text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
            out[key[:MAX_KEY]] = text[:MAX_PARAM_VALUE]
    return out


def _tag_values(tags: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(k)[:MAX_KEY]: (v if isinstance(v, str) else canonical_json(v))[:MAX_TAG_VALUE]
        for k, v in tags.items()
    }


def _quoted(value: str) -> str:
    if "'" in value or "\\" in value:
        raise InvalidArgError("a campaign or cell id may not hold quotes or backslashes", id=value)
    return f"'{value}'"


class CampaignTracker:
    """A campaign's runs in one MLflow experiment (created with ``artifact_location`` when missing)."""

    def __init__(self, uri: str, experiment: str, artifact_location: str | None = None) -> None:
        import_mlflow()
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        self._lock = threading.RLock()
        self.experiment_id = self._experiment(experiment, artifact_location)

    def _experiment(self, name: str, artifact_location: str | None) -> str:
        from mlflow.exceptions import MlflowException

        with self._lock:
            exp = self.client.get_experiment_by_name(name)
            if exp is None:
                try:
                    return self.client.create_experiment(
                        name, artifact_location=artifact_location, tags=dict([EXPERIMENT_KIND])
                    )
                except MlflowException:  # another job of a sweep created it first
                    exp = self.client.get_experiment_by_name(name)
                    if exp is None:
                        raise
            if exp.lifecycle_stage == "deleted":
                self.client.restore_experiment(exp.experiment_id)
            if EXPERIMENT_KIND[0] not in exp.tags:
                self.client.set_experiment_tag(exp.experiment_id, *EXPERIMENT_KIND)
            return exp.experiment_id

    # -- runs -------------------------------------------------------------------------------------------
    def _find(self, filters: Sequence[str]) -> Any | None:
        runs = self.client.search_runs(
            [self.experiment_id], filter_string=" and ".join(filters), max_results=2, order_by=["start_time"]
        )
        return runs[0] if runs else None

    def _start(
        self,
        filters: Sequence[str],
        name: str,
        params: Mapping[str, Any],
        tags: Mapping[str, Any],
        check_params: bool = True,
    ) -> str:
        with self._lock:
            run = self._find(filters)
            if run is None:
                run = self.client.create_run(self.experiment_id, tags=_tag_values(tags), run_name=name)
                existing: dict[str, str] = {}
            else:
                self.client.update_run(run.info.run_id, status="RUNNING")
                existing = dict(run.data.params)
                self._log_batch(run.info.run_id, tags=_tag_values(tags))
            self._log_params(run.info.run_id, flatten(params), existing, check=check_params)
            return str(run.info.run_id)

    def start_campaign(
        self,
        campaign_id: str,
        params: Mapping[str, Any],
        tags: Mapping[str, Any],
        name: str | None = None,
        *,
        check_params: bool = True,
    ) -> str:
        """The parent run of ``campaign_id`` (resumed if a run with that tag exists); ``params`` is the
        (nested) config, flattened; ``tags`` are added to ``tgms.kind`` and ``tgms.campaign_id``; ``name``
        is what the MLflow UI shows (default the id).

        ``check_params=False``: the id alone says whether a resumed run is the same campaign, so a param
        logged with another value keeps its first value instead of being ``E_CONFLICT``. The driver's id
        (:func:`pipeline.campaign.cell_spec.campaign_id`) hashes what the campaign computes and nothing
        else: under the same id a changed param is operational by construction (a replica URL, a
        timeout, a description, an unused catalog entry, the order of a list)."""
        all_tags = {**tags, "tgms.kind": "campaign", "tgms.campaign_id": campaign_id}
        filters = ["tags.`tgms.kind` = 'campaign'", f"tags.`tgms.campaign_id` = {_quoted(campaign_id)}"]
        return self._start(filters, name or campaign_id, params, all_tags, check_params)

    def start_cell(
        self,
        parent_id: str,
        cell_params: Mapping[str, Any],
        cell_tags: Mapping[str, Any],
        name: str | None = None,
    ) -> str:
        """The child run of one cell under ``parent_id`` (resumed by its ``tgms.cell_id`` tag), shown as
        ``name`` (default the cell id)."""
        cell_id = cell_tags.get("tgms.cell_id")
        if not isinstance(cell_id, str) or not cell_id:
            raise InvalidArgError("cell tags need a 'tgms.cell_id'", tags=sorted(cell_tags))
        all_tags = {**cell_tags, "tgms.kind": "cell", "mlflow.parentRunId": parent_id}
        filters = [
            "tags.`tgms.kind` = 'cell'",
            f"tags.`mlflow.parentRunId` = {_quoted(parent_id)}",
            f"tags.`tgms.cell_id` = {_quoted(cell_id)}",
        ]
        return self._start(filters, name or cell_id, cell_params, all_tags)

    def log_bundle(self, run_id: str, suite: str, path: Path, manifest: Manifest) -> None:
        """The suite's bundle as the run's MLflow dataset input (the UI's Dataset column): named
        ``<suite>-s<seed>``, its digest the store digest's head, its source the bundle directory."""
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.meta_dataset import MetaDataset
        from mlflow.entities import DatasetInput, InputTag

        with warnings.catch_warnings():  # a local path matches two registered local sources: either is it
            warnings.simplefilter("ignore", UserWarning)
            source = resolve_dataset_source(str(Path(path).resolve()))
        digest = manifest.store_digest[:32]
        # mlflow's Dataset marks `profile` @abstractmethod without ABCMeta; MetaDataset, concrete, omits it
        dataset = MetaDataset(  # type: ignore[abstract]
            source, name=f"{suite}-s{manifest.seed}", digest=digest
        )
        context = [InputTag("mlflow.data.context", "evaluation")]
        entity = DatasetInput(dataset._to_mlflow_entity(), tags=context)
        with self._lock:
            self.client.log_inputs(run_id, datasets=[entity])

    def end_run(self, run_id: str, status: str = "FINISHED") -> None:
        if status not in STATUSES:
            raise InvalidArgError(f"unknown run status {status!r}", allowed=list(STATUSES))
        with self._lock:
            self.client.set_terminated(run_id, status=status)

    # -- logging ----------------------------------------------------------------------------------------
    def log_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        """Log (nested) params flattened to ``a.b.c``; already logged keys follow the resume rule."""
        with self._lock:
            existing = dict(self.client.get_run(run_id).data.params)
            self._log_params(run_id, flatten(params), existing)

    def _log_params(
        self, run_id: str, params: Mapping[str, str], existing: Mapping[str, str], check: bool = True
    ) -> None:
        changed = sorted(
            k
            for k, v in params.items()
            if k in existing and existing[k] != v and not k.startswith(RESUME_MUTABLE)
        )
        if changed and check:
            raise ConflictError(
                "the run exists with other values for these params: not the same campaign or cell",
                run_id=run_id,
                params={k: {"logged": existing[k], "now": params[k]} for k in changed[:20]},
            )
        self._log_batch(run_id, params={k: v for k, v in params.items() if k not in existing})

    def log_metrics(self, run_id: str, metrics: Mapping[str, float], step: int = 0) -> None:
        with self._lock:
            self._log_batch(run_id, metrics=metrics, step=step)

    def _log_batch(
        self,
        run_id: str,
        *,
        params: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
        metrics: Mapping[str, float] | None = None,
        step: int = 0,
    ) -> None:
        from mlflow.entities import Metric, Param, RunTag

        ps = [Param(k, v) for k, v in (params or {}).items()]
        ts = [RunTag(k, v) for k, v in (tags or {}).items()]
        now = int(time.time() * 1000)
        ms = [Metric(k, float(v), now, step) for k, v in (metrics or {}).items()]
        pt = ps + ts
        for i in range(0, len(pt), PARAMS_PER_BATCH):
            chunk = pt[i : i + PARAMS_PER_BATCH]
            self.client.log_batch(
                run_id,
                params=[x for x in chunk if isinstance(x, Param)],
                tags=[x for x in chunk if isinstance(x, RunTag)],
            )
        for i in range(0, len(ms), METRICS_PER_BATCH):
            self.client.log_batch(run_id, metrics=ms[i : i + METRICS_PER_BATCH])

    def set_tags(self, run_id: str, tags: Mapping[str, Any]) -> None:
        with self._lock:
            self._log_batch(run_id, tags=_tag_values(tags))

    def log_artifacts(
        self, run_id: str, paths: Iterable[str | Path], artifact_path: str | None = None
    ) -> None:
        """Log files (by their name) and directories (their contents) under ``artifact_path``."""
        with self._lock:
            for p in map(Path, paths):
                if p.is_dir():
                    self.client.log_artifacts(run_id, str(p), artifact_path)
                elif p.is_file():
                    self.client.log_artifact(run_id, str(p), artifact_path)
                else:
                    raise NotFoundError(f"no artifact file or directory at {p}", run_id=run_id)

    def log_text(self, run_id: str, name: str, text: str) -> None:
        """Log ``text`` as the artifact ``name`` (a relative path such as ``tables/table4.md``)."""
        with tempfile.TemporaryDirectory(prefix="tgms-artifact-") as tmp:
            path = Path(tmp) / Path(name).name
            path.write_text(text, encoding="utf-8")
            parent = str(Path(name).parent)
            self.log_artifacts(run_id, [path], None if parent == "." else parent)

    def _log_file_as(self, run_id: str, path: Path, name: str) -> None:
        if path.name == name:
            self.log_artifacts(run_id, [path])
            return
        if not path.is_file():
            raise NotFoundError(f"no artifact file at {path}", run_id=run_id)
        with tempfile.TemporaryDirectory(prefix="tgms-artifact-") as tmp:
            shutil.copyfile(path, Path(tmp) / name)
            self.log_artifacts(run_id, [Path(tmp) / name])

    def log_tables(self, run_id: str, tables: Mapping[str, Table | Document]) -> None:
        """Log table models ``{stem: table}`` as ``tables/<stem>.md`` and ``.tex`` (both rendered from the
        model, never one from the other) and ``.json`` (its ``model_dump_json``, what ``tgms report`` reads
        back)."""
        with tempfile.TemporaryDirectory(prefix="tgms-tables-") as tmp:
            paths = []
            for stem, table in tables.items():
                files = {".md": to_markdown(table), ".tex": to_latex(table), ".json": table.model_dump_json()}
                for suffix, text in files.items():
                    paths.append(Path(tmp) / f"{stem}{suffix}")
                    paths[-1].write_text(text, encoding="utf-8")
            self.log_artifacts(run_id, paths, "tables")

    def log_suite_tables(self, run_id: str, suites: Mapping[str, Suite]) -> None:
        """Table 2 of every suite of the campaign (``{suite name: suite}``), one after the
        other, as the parent's ``tables/table2.md``, ``.tex`` and ``.json`` (``tgms report``'s Table 2)."""
        from tgms.pipeline.tasks.stats import table2

        doc = Document(name="table2", tables=tuple(table2(suites[n]) for n in sorted(suites)))
        self.log_tables(run_id, {"table2": doc})

    # -- cells, comparisons -----------------------------------------------------------------------------
    def log_cell_spec(self, run_id: str, path: str | Path) -> None:
        """The cell's spec file (``specs/<cell_id>.json``) as the run's ``cell_spec.json`` artifact (its
        hash is the ``tgms.cell_spec_sha256`` tag, set with the cell's tags)."""
        self._log_file_as(run_id, Path(path), "cell_spec.json")

    def log_cell(
        self,
        run_id: str,
        records: Sequence[TaskRecord],
        files: Sequence[str | Path] | Mapping[str, str | Path] = (),
    ) -> dict[str, float]:
        """Log a cell's metrics (computed from its records) and its files; the metrics.

        ``files`` as a mapping is ``{artifact name: path}``; as a list, a file in a ``records/`` or
        ``traces/`` directory (``records/<cell_id>.jsonl``) is logged as ``records.jsonl`` /
        ``traces.jsonl``, any other under its own name.
        """
        metrics = cell_metrics(records)
        self.log_metrics(run_id, metrics)
        named = dict(files) if isinstance(files, Mapping) else {_artifact_name(Path(f)): f for f in files}
        for name, path in named.items():
            self._log_file_as(run_id, Path(path), name)
        return metrics

    def log_comparisons(
        self,
        parent_id: str,
        records_by_cell: Mapping[Any, Sequence[TaskRecord]],
        resamples: int = 10_000,
    ) -> list[dict[str, Any]]:
        """Paired bootstraps (``resamples``, seed 0) for every pair of systems sharing suite, model, seed
        and ablation; logged as ``ci.*`` metrics and ``comparisons.json`` on the parent; returned.

        Keys of ``records_by_cell`` are cells (anything with ``tags()``, e.g.
        :class:`pipeline.campaign.cells.Cell`) or their tags as a tuple of ``(key, value)`` pairs.
        """
        cells = [(_tags_of(key), recs) for key, recs in records_by_cell.items()]
        comparisons = compare_cells(cells, resamples=resamples, seed=0)
        self.log_metrics(parent_id, comparison_metrics(comparisons))
        self.log_text(parent_id, "comparisons.json", json.dumps(comparisons, indent=1, sort_keys=True) + "\n")
        return comparisons

    # -- mutations, operator benchmark ------------------------------------------------------------------
    def _side_run(
        self, kind: str, parent_id: str | None, campaign_id: str | None, tags: Mapping[str, Any]
    ) -> str:
        filters = [f"tags.`tgms.kind` = {_quoted(kind)}"]
        all_tags: dict[str, Any] = {**tags, "tgms.kind": kind}
        if parent_id is not None:
            filters.append(f"tags.`mlflow.parentRunId` = {_quoted(parent_id)}")
            all_tags["mlflow.parentRunId"] = parent_id
        if campaign_id is not None:
            filters.append(f"tags.`tgms.campaign_id` = {_quoted(campaign_id)}")
            all_tags["tgms.campaign_id"] = campaign_id
        if parent_id is None and campaign_id is None:
            with self._lock:  # nothing to resume by: a new run every time
                return str(
                    self.client.create_run(
                        self.experiment_id, tags=_tag_values(all_tags), run_name=kind
                    ).info.run_id
                )
        return self._start(filters, kind, {}, all_tags)

    def log_mutations(
        self,
        parent_id: str | None,
        result: Mapping[str, Any],
        out_dir: str | Path,
        *,
        campaign_id: str | None = None,
    ) -> str:
        """The mutation experiment (Table 5) as a run of kind ``mutations`` (nested under ``parent_id``
        when given): per class ``<class>.cases``, ``.detections``, ``.false_positives``, ``.without`` (the
        last only for classes with a mechanism to switch off); ``mutations.json`` and ``table5.md`` (also
        written to ``out_dir``) as artifacts. Finished when it returns; the run id."""
        from tgms.pipeline.mutations import table5, write_outputs

        tags = {
            "tgms.dataset": str(result.get("dataset")),
            "tgms.store_digest": str(result.get("store_digest")),
            "tgms.seed": str(result.get("seed")),
        }
        run_id = self._side_run("mutations", parent_id, campaign_id, tags)
        metrics: dict[str, float] = {}
        for c in result["classes"]:
            metrics[metric_key(c["class"], "cases")] = c["cases"]
            metrics[metric_key(c["class"], "detections")] = c["detected"]
            metrics[metric_key(c["class"], "false_positives")] = c["false_positives"]
            if c.get("detected_without_mechanism") is not None:
                metrics[metric_key(c["class"], "without")] = c["detected_without_mechanism"]
        self.log_params(run_id, {"per_class": result.get("per_class"), "seed": result.get("seed")})
        self.log_metrics(run_id, metrics)
        out = Path(out_dir)
        write_outputs(dict(result), out)
        (out / "table5.tex").write_text(to_latex(table5(dict(result))), encoding="utf-8")
        self.log_artifacts(run_id, [out / "mutations.json", out / "table5.md", out / "table5.tex"])
        self.end_run(run_id)
        return run_id

    def log_ops_bench(
        self,
        records: Sequence[Mapping[str, Any]],
        *,
        parent_id: str | None = None,
        campaign_id: str | None = None,
    ) -> str:
        """The operator benchmark (§5.6) as a run of kind ``ops_bench``: per case and scale
        ``<case>.<scale>.median_ms`` (p50), ``.p95_ms``, ``.first_ms``, ``.target_ms``, ``.ratio`` and the
        records as ``ops_bench.json``. Finished when it returns; the run id."""
        run_id = self._side_run("ops_bench", parent_id, campaign_id, {})
        names = {"p50_ms": "median_ms", "p95_ms": "p95_ms", "first_ms": "first_ms", "target_ms": "target_ms",
                 "ratio": "ratio", "peak_rss_mb": "peak_rss_mb"}  # fmt: skip
        metrics = {
            metric_key(r["case"], r["scale"], name): float(r[field])
            for r in records
            for field, name in names.items()
            if isinstance(r.get(field), (int, float))
        }
        self.log_metrics(run_id, metrics)
        self.log_text(run_id, "ops_bench.json", json.dumps(list(records), indent=1, sort_keys=True) + "\n")
        self.end_run(run_id)
        return run_id


def _artifact_name(path: Path) -> str:
    if path.parent.name in ("records", "traces") and path.suffix == ".jsonl":
        return f"{path.parent.name}.jsonl"
    return path.name


def _tags_of(key: Any) -> dict[str, str]:
    if hasattr(key, "tags"):
        return {str(k): str(v) for k, v in key.tags().items()}
    if isinstance(key, tuple) and all(isinstance(x, tuple) and len(x) == 2 for x in key):
        return {str(k): str(v) for k, v in key}
    raise InvalidArgError(
        "records_by_cell keys must be cells (with tags()) or tuples of (tag, value) pairs",
        got=type(key).__name__,
    )
