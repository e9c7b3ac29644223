"""``tgms-campaign``: the campaign driver (Hydra entry point).

With no overrides it is the main job (``experiment=main``): a stratified slice of the CollegeMsg dev split,
all four systems on the local CPU model, local Ray and a SQLite MLflow store in the run directory, then the
mutation experiment; it prints Tables 4 and 5. Steps:

1. compose ``conf/`` with the overrides and validate it (:mod:`pipeline.campaign.config`): a bad key or
   value fails here, before anything starts;
2. build each suite's canonical bundle, or verify the one already there (:mod:`pipeline.campaign.bundle`);
3. open the model (a local server or scripted double started here and stopped on exit, or a user's
   endpoints checked for readiness) and the Ray runtime; start the task actors, each of which replays the
   bundle from Ray's object store and refuses to serve unless its digest equals the manifest's;
4. select each suite's tasks and resolve each cell's spec (:mod:`pipeline.campaign.cell_spec`); one MLflow
   parent run, found again by the campaign id (the hash of the cell specs), one child run per cell (suite,
   system, model, seed, ablation) with its spec as ``specs/<cell_id>.json`` and ``cell_spec.json``; fan the
   tasks out, append each record to ``records/<cell>.jsonl`` as it arrives (a killed run resumes from there),
   show live progress; log metrics, paired-bootstrap CIs and artifacts;
5. the mutation experiment and the operator benchmark when the experiment asks for them; the tables.

Every process started here is stopped here, on errors and on Ctrl-C too.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError, NotFoundError, TGMSError, replay, write_atomic
from tgms.models.config import ModelConfig
from tgms.models.local.paths import cache_root
from tgms.pipeline.campaign.bundle import (
    EVENTLOG,
    MANIFEST,
    Manifest,
    build_bundle,
    read_suite,
    verify_bundle,
)
from tgms.pipeline.campaign.bundle_cache import bundle_key, fetch, keep
from tgms.pipeline.campaign.cell_spec import (
    CELL_SPEC_TAG,
    SPECS_DIR,
    CellSpec,
    Provenance,
    campaign_id,
    cell_spec,
    provenance,
    task_list_sha256,
)
from tgms.pipeline.campaign.cells import Cell, cells_of, select_tasks, system_config
from tgms.pipeline.campaign.config import CampaignConfig, SuiteConf, validate
from tgms.pipeline.campaign.preflight import preflight
from tgms.pipeline.campaign.resume import CellResume, resume_cell
from tgms.pipeline.campaign.tracking import bundle_tags, default_artifact_location, default_uri
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.signals import interrupted_by_sigterm, raise_lost_sigterm, sigterm_as_interrupt, stopped
from tgms.pipeline.systems.embeddings import EMBED_THREADS_ENV
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.table import Document, Table, to_markdown

#: the Hydra config tree: conf/ at the repository root
CONF_DIR = Path(__file__).resolve().parents[2] / "conf"


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class CellResult:
    cell: Cell
    run_id: str
    records: list[TaskRecord]
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class CampaignResult:
    parent_run_id: str
    tracking_uri: str
    experiment: str
    cells: list[CellResult]
    comparisons: list[dict[str, Any]]
    tables: dict[str, str]
    seconds: float


# -- bundles ---------------------------------------------------------------------------------------------
def suite_key(name: str, suite: SuiteConf) -> str:
    key = f"{name}-s{suite.seed}"
    return f"{key}-e{suite.events}-n{suite.nodes}" if suite.dataset == "synthetic" else key


def ensure_bundle(
    name: str, suite: SuiteConf, root: Path, cache: Path | None = None
) -> tuple[Path, Manifest]:
    """The suite's bundle: the configured one or the run's own, verified when it exists; else a copy of
    the same bundle from ``cache`` (:mod:`pipeline.campaign.bundle_cache`), verified; else built (and a
    copy kept in ``cache``)."""
    target = Path(suite.bundle) if suite.bundle else root / suite_key(name, suite)
    if (target / MANIFEST).exists():
        say(f"verifying the {name} bundle {target} ...")
        return target, verify_bundle(target).manifest
    if suite.bundle:
        raise InvalidArgError(f"catalog.suites.{name}.bundle: no bundle at {target}", path=str(target))
    key = None
    if cache is not None:
        key = bundle_key(suite.dataset, suite.seed, suite.source, suite.events, suite.nodes)
        manifest = fetch(cache, key, target)
        if manifest is not None:
            say(f"the {name} bundle is a verified copy of {cache / key} (built before by the same code)")
            return target, manifest
    say(f"building the {name} bundle into {target} (canonical clock) ...")
    manifest = build_bundle(
        suite.dataset, suite.seed, target, source=suite.source, events=suite.events, nodes=suite.nodes,
        progress=say,
    )  # fmt: skip
    if cache is not None and key is not None and not keep(cache, key, target):
        say(f"could not keep a copy of the {name} bundle in {cache}; the next run builds it again")
    return target, manifest


def bundle_cache_dir(config: CampaignConfig) -> Path | None:
    """Where built bundles are kept for reuse (``run.bundle_cache``); None: ``run.reuse_bundles`` is off."""
    if not config.run.reuse_bundles:
        return None
    if config.run.bundle_cache:
        return Path(config.run.bundle_cache)
    return (Path(config.run.cache_dir) if config.run.cache_dir else cache_root()) / "bundles"


# -- tracking --------------------------------------------------------------------------------------------
def tracking_target(config: CampaignConfig, base_dir: Path) -> tuple[str, str, str]:
    """(tracking URI, experiment name, artifact location): by default a SQLite store in the run
    directory (the sweep's directory under --multirun, so a sweep lands in one experiment)."""
    uri = (
        config.tracking.uri
        or os.environ.get("MLFLOW_TRACKING_URI")  # as `tgms report` and MLflow itself read it
        or default_uri(base_dir)
    )
    artifacts = config.tracking.artifact_location or default_artifact_location(base_dir)
    return uri, config.tracking.experiment or config.experiment.name, artifacts


# -- evaluation ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellPlan:
    """What the cells run, resolved before the parent run starts (its id is made of the cell specs)."""

    tasks: dict[str, list[Task]]  # suite -> the tasks every cell of that suite runs
    specs: dict[Cell, CellSpec]


def plan_cells(
    config: CampaignConfig, bundles: dict[str, tuple[Path, Manifest]], origin: Provenance
) -> CellPlan:
    """Each suite's tasks (:func:`select_tasks`) and each cell's spec; nothing when the experiment does not
    evaluate (its cells run nothing, so they are not part of what it computes)."""
    if not config.experiment.evaluate:
        return CellPlan({}, {})
    listed, digest = None, None
    if config.experiment.task_list is not None:
        from tgms.pipeline.tasks.slices import read_task_list

        path = Path(config.experiment.task_list)
        if not path.is_file():
            raise NotFoundError(f"experiment.task_list: no file at {path}", path=str(path))
        content = path.read_bytes()  # read once: the ids selected and the hash are of the same bytes
        listed, digest = read_task_list(content.decode("utf-8")), task_list_sha256(content)
    tasks = {
        name: select_tasks(
            read_suite(path),
            config.experiment.split,
            config.experiment.per_family,
            config.experiment.limit,
            config.experiment.slice,
            listed,
        )
        for name, (path, _) in bundles.items()
    }
    specs = {
        cell: cell_spec(
            config, cell, bundles[cell.suite][1], tasks[cell.suite], task_list_digest=digest, origin=origin
        )
        for cell in cells_of(config)
    }
    return CellPlan(tasks, specs)


def write_cell_spec(run_dir: Path, cell: Cell, spec: CellSpec) -> Path:
    """``specs/<cell_id>.json`` in the run directory (replaced whole: a rerun across commits rewrites the
    provenance, never the hashed fields, which the campaign id pins)."""
    path = run_dir / SPECS_DIR / f"{cell.cell_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, spec.to_json(), fsync=False, shared=True)  # a reader never sees half a spec
    return path


def evaluate(
    config: CampaignConfig,
    run_dir: Path,
    bundles: dict[str, tuple[Path, Manifest]],
    tracker: Any,
    parent: str,
    plan: CellPlan,
) -> list[CellResult]:
    tasks = plan.tasks
    (run_dir / "records").mkdir(parents=True, exist_ok=True)
    (run_dir / "traces").mkdir(parents=True, exist_ok=True)
    cells = cells_of(config)

    def paths(cell: Cell) -> tuple[Path, Path]:
        return run_dir / "records" / f"{cell.cell_id}.jsonl", run_dir / "traces" / f"{cell.cell_id}.jsonl"

    def recorded(cell: Cell) -> CellResume:
        return resume_cell(paths(cell)[0], tasks[cell.suite], plan.specs[cell].sha256())

    if not config.run.resume:
        for cell in cells:
            _set_aside(paths(cell))
    several = len(config.suites) > 1
    run_ids = {
        c: tracker.start_cell(
            parent,
            _knob_params(config, c),
            {**_cell_tags(config, c), CELL_SPEC_TAG: plan.specs[c].sha256()},
            c.run_name(several),
        )
        for c in cells
    }
    for c, run_id in run_ids.items():
        tracker.log_bundle(run_id, c.suite, *bundles[c.suite])  # the UI's Dataset column: the suite's bundle
        # the spec first, as the cell starts: a cell that fails still says what it was running
        tracker.log_cell_spec(run_id, write_cell_spec(run_dir, c, plan.specs[c]))
    try:
        return _evaluate_cells(
            config, run_dir, bundles, tracker, cells, run_ids, tasks, plan.specs, paths, recorded
        )
    except BaseException as exc:  # the cell runs end with the campaign: none is left RUNNING
        status = "KILLED" if stopped(exc) else "FAILED"
        for run_id in run_ids.values():
            with contextlib.suppress(Exception):
                tracker.end_run(run_id, status)
        raise


def _evaluate_cells(
    config: CampaignConfig,
    run_dir: Path,
    bundles: dict[str, tuple[Path, Manifest]],
    tracker: Any,
    cells: list[Cell],
    run_ids: dict[Cell, str],
    tasks: dict[str, list[Task]],
    specs: dict[Cell, CellSpec],
    paths: Any,
    recorded: Any,
) -> list[CellResult]:
    from tgms.pipeline.campaign.endpoints import open_model
    from tgms.pipeline.campaign.executor import CellJob, run_jobs, run_settings, start_actors, write_result
    from tgms.pipeline.campaign.progress import Progress
    from tgms.pipeline.campaign.ray_runtime import ray_session
    from tgms.pipeline.campaign.records import TaskResult

    # read once: the executor skips the same tasks (it asks resume_cell too), progress counts these
    resumed = {cell: recorded(cell) for cell in cells}
    prior = {cell: resumed[cell].records for cell in cells}
    todo = {cell: resumed[cell].todo for cell in cells}
    pending = sum(len(v) for v in todo.values())
    stale = sum(r.stale for r in resumed.values())
    aside = f"; {stale} record(s) of another cell spec not reused" if stale else ""
    pairs = sum(len(tasks[c.suite]) for c in cells)
    say(f"{len(cells)} cells, {pairs} (task, cell) pairs, {pending} to run{aside}")
    if pending:
        progress = Progress(config.run.progress_every_s)
        for cell in cells:
            progress.add_cell(cell.cell_id, len(tasks[cell.suite]), prior[cell])
        cache = Path(config.run.cache_dir) if config.run.cache_dir else None
        with ExitStack() as stack:
            endpoint, generation = stack.enter_context(
                open_model(config.model, cache, config.run.response_cache)
            )
            # a model server started above shares this machine's cores with the actors: the systems are
            # built first, alone, the embedder on every core (Ray gives an actor one thread by default;
            # actors inherit the driver's environment), and only then do tasks reach the model
            same_cores = config.model.serving.kind == "local" and config.cluster.kind == "local"
            if same_cores:
                stack.enter_context(environment(EMBED_THREADS_ENV, str(os.cpu_count() or 1)))
            stack.enter_context(ray_session(config.cluster))
            # system builds (embeddings, Kuzu graphs) are keyed by store digest and knobs: under the cache
            # directory a later run reuses them instead of recomputing them per run directory
            work = Path(config.run.cache_dir) / "campaign-work" if config.run.cache_dir else run_dir / "work"
            pool = stack.enter_context(start_actors(bundles, endpoint, config.cluster, str(work)))
            jobs = [
                CellJob(
                    cell,
                    system_config(config, cell),
                    run_settings(cell, generation, config.experiment.repair_budget),
                    todo[cell],
                    paths(cell)[0],
                    paths(cell)[1],
                    specs[cell].sha256(),
                )
                for cell in cells
                if todo[cell]
            ]

            def on_record(job: CellJob, result: TaskResult) -> None:
                write_result(job, result)  # durable before it is counted
                progress.record(job.cell.cell_id, result.record)
                raise_lost_sigterm()  # a SIGTERM whose exception a library swallowed stops here

            cap = config.run.max_in_flight or 2 * endpoint.concurrency * len(endpoint.base_urls)
            with progress:
                run_jobs(
                    pool, jobs, on_record, resume=config.run.resume, max_in_flight=cap,
                    prepare="first" if same_cores else "overlap",
                )  # fmt: skip
    out = []
    for cell in cells:
        records = recorded(cell).records
        files = [p for p in paths(cell) if p.exists()]
        metrics = tracker.log_cell(run_ids[cell], records, files)
        tracker.end_run(run_ids[cell], "FINISHED")
        out.append(CellResult(cell, run_ids[cell], records, metrics))
    return out


def _set_aside(files: tuple[Path, ...]) -> None:
    """run.resume=false: the cell starts from empty files; earlier ones are renamed ``<name>.<n>.old``, not
    deleted (they hold acknowledged results)."""
    for f in files:
        if f.exists():
            n = 1
            while f.with_name(f"{f.name}.{n}.old").exists():
                n += 1
            f.rename(f.with_name(f"{f.name}.{n}.old"))


def _local_engine(engine: str) -> str:
    from tgms.models.local import resolve_engine  # the local extra's imports stay out of remote runs

    return resolve_engine(engine)


def _serving_tags(model: ModelConfig) -> dict[str, str]:
    """How the run's model was served, as tags: ``tgms.serving`` is the generation config (as configured;
    the cell's seed is its own tag) plus the serving kind and engine (Table 6 reads ``tgms.params_b``;
    absent for the test double, which has no size)."""
    gen, kind = model.generation, model.serving.kind
    serving = {
        **gen.model_dump(mode="json"),
        "kind": kind,
        "engine": _local_engine(model.serving.local_engine) if kind == "local" else gen.flavour,
    }
    tags = {"tgms.model": model.name, "tgms.serving": json.dumps(serving, sort_keys=True)}
    if model.params_b is not None:
        tags["tgms.params_b"] = f"{model.params_b:g}"
    if gen.quantization:
        tags["tgms.quantization"] = gen.quantization
    return tags


def _cell_tags(config: CampaignConfig, cell: Cell) -> dict[str, str]:
    """The cell's identity tags plus how its model was served."""
    return {**cell.tags(), **_serving_tags(config.model)}


def _knob_params(config: CampaignConfig, cell: Cell) -> dict[str, Any]:
    from tgms.pipeline.campaign.tracking import flatten

    return flatten({"system": system_config(config, cell), "suite": cell.suite, "seed": cell.seed})


# -- mutations and the operator benchmark ------------------------------------------------------------------
def mutations(config: CampaignConfig, run_dir: Path, bundles: dict[str, tuple[Path, Manifest]], tracker: Any,
              parent: str) -> dict[str, Any]:  # fmt: skip
    from tgms.pipeline.mutations import run_experiment

    name = config.suites[0]
    path, _ = bundles[name]
    say(f"running the verifier mutation experiment (Table 5) on the {name} bundle ...")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tgms-mutations-") as scratch:
        store_dir = Path(scratch) / "store"
        replay(path / EVENTLOG, store_dir, "duckdb").close()
        suite = read_suite(path)
        m = config.experiment.mutations
        result = run_experiment(store_dir, suite, per_class=m.per_class, seed=m.seed)
    out = run_dir / "mutations"
    tracker.log_mutations(parent, result, out)  # writes mutations.json, table5.md and .tex there too
    say(f"mutation experiment done in {time.perf_counter() - t0:.1f} s ({out})")
    return result


def ops_bench(config: CampaignConfig, run_dir: Path, tracker: Any, parent: str) -> list[dict[str, Any]]:
    from tgms.pipeline.latency.operators import run as run_ops
    from tgms.pipeline.latency.stores import parse_scales

    o = config.experiment.ops_bench
    scales = parse_scales(",".join(o.scales))
    records = run_ops(scales, o.reps, run_dir / "ops_bench", say)
    (run_dir / "ops_bench.json").write_text(json.dumps(records, indent=1, sort_keys=True))
    tracker.log_ops_bench(records, parent_id=parent)
    return records


# -- the campaign ------------------------------------------------------------------------------------------
def run_campaign(config: CampaignConfig, base_dir: Path, resolved_yaml: str = "") -> CampaignResult:
    """Run one campaign (see the module docstring); the tables are printed by :func:`main`."""
    from tgms.pipeline.campaign import tables as tables_mod
    from tgms.pipeline.campaign.tracking import CampaignTracker, flatten, git_commit, git_revision

    t0 = time.perf_counter()
    run_dir = Path(config.run.dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(resolved_yaml, encoding="utf-8")
    bundles = {
        name: ensure_bundle(name, config.catalog.suites[name], base_dir / "bundles", bundle_cache_dir(config))
        for name in config.suites
    }
    uri, experiment, artifacts = tracking_target(config, base_dir)
    tracker = CampaignTracker(uri, experiment, artifacts)
    tags = {
        "tgms.kind": "campaign",
        "tgms.experiment": config.experiment.name,
        "tgms.git_revision": git_revision(),
        **_serving_tags(config.model),
        "tgms.run_dir": str(run_dir.resolve()),
    }
    commit = git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    for name, (_, manifest) in bundles.items():
        tags.update(bundle_tags(name, manifest))
    title = f"{config.experiment.name} · {', '.join(config.suites)} · {config.model.name}"
    # the tasks and cell specs are resolved once, here, because the parent's id is made of them
    plan = plan_cells(config, bundles, provenance(tags["tgms.git_revision"]))
    cid = campaign_id(config, {n: m for n, (_, m) in bundles.items()}, plan.specs.values())
    # the id decides whether this is the same campaign: a param that differs under it is operational
    params = flatten(config.model_dump(mode="json"))
    parent = tracker.start_campaign(cid, params, tags, title, check_params=False)
    status = "FAILED"
    try:
        for name, (path, manifest) in bundles.items():
            tracker.log_bundle(parent, name, path, manifest)
        suites = {n: read_suite(p) for n, (p, _) in bundles.items()}
        tracker.log_suite_tables(parent, suites)  # Table 2 of `tgms report` (tables/table2.md, .tex, .json)
        cells: list[CellResult] = []
        comparisons: list[dict[str, Any]] = []
        models: dict[str, Table | Document] = {}
        if config.experiment.evaluate:
            cells = evaluate(config, run_dir, bundles, tracker, parent, plan)
            comparisons = tracker.log_comparisons(parent, {c.cell: c.records for c in cells})
            rows = [{"tags": c.cell.tags(), "metrics": c.metrics} for c in cells]
            models["table4"] = tables_mod.table4(rows, comparisons)
        if config.experiment.mutations.enabled:
            from tgms.pipeline.mutations import table5

            models["table5"] = table5(mutations(config, run_dir, bundles, tracker, parent))
        if config.experiment.ops_bench.enabled:
            from tgms.pipeline.latency.operators import table_model as ops_table

            models["ops_bench"] = ops_table(ops_bench(config, run_dir, tracker, parent))
        tables = {name: to_markdown(m) for name, m in models.items()}
        tables_dir = run_dir / "tables"
        tables_dir.mkdir(exist_ok=True)
        for name, m in models.items():  # the run directory holds what MLflow does: Markdown and the model
            (tables_dir / f"{name}.md").write_text(tables[name], encoding="utf-8")
            (tables_dir / f"{name}.json").write_text(m.model_dump_json(), encoding="utf-8")
        tracker.log_artifacts(parent, [run_dir / "config.yaml"])
        tracker.log_tables(parent, models)  # tables/<name>.md, .tex and .json
        status = "FINISHED"
    except BaseException as exc:
        if stopped(exc):
            status = "KILLED"
        raise
    finally:
        tracker.end_run(parent, status)
    return CampaignResult(parent, uri, experiment, cells, comparisons, tables, time.perf_counter() - t0)


@contextmanager
def _structured_errors() -> Iterator[None]:
    """Whatever escapes leaves as the one structured error on stderr and in driver.log, with a non-zero
    exit (never a traceback); an interrupt as a line saying what was kept (pipeline.campaign.boundary)."""
    from tgms.pipeline.boundary import exit_code, write_error

    try:
        yield
    except Exception as exc:  # Ray, MLflow, the file system: the one structured error, never a traceback
        from tgms.pipeline.campaign.boundary import report

        err = report(exc)
        write_error(err)
        sys.exit(exit_code(err))
    except KeyboardInterrupt as exc:
        name = "SIGTERM" if interrupted_by_sigterm(exc) else "SIGINT"
        say(
            f"interrupted ({name}): every process this campaign started has been stopped, its MLflow runs "
            "ended as KILLED and every record written so far kept; rerun the same command to resume"
        )
        sys.exit(143 if interrupted_by_sigterm(exc) else 130)


def _task(cfg: Any) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    base_dir = Path(hc.sweep.dir if multirun else hc.runtime.output_dir)
    with _structured_errors(), sigterm_as_interrupt():  # SIGTERM stops in order, as Ctrl-C does
        config = validate(OmegaConf.to_container(cfg, resolve=True))
        try:  # before the run directory, the bundles or the tracking store are touched
            preflight(config, tracking_target(config, base_dir)[0], Path(config.run.dir), say)
        except TGMSError:
            _discard_fresh_run_dir(Path(config.run.dir))
            raise
        result = run_campaign(config, base_dir, OmegaConf.to_yaml(cfg, resolve=True))
        if config.run.print_tables:
            for text in result.tables.values():
                print(text.rstrip() + "\n", flush=True)
        print(
            f"campaign {config.experiment.name}: {len(result.cells)} cells in {result.seconds:.0f} s; "
            f"MLflow run {result.parent_run_id} in {result.tracking_uri} (experiment {result.experiment!r}); "
            f"open it with: mlflow ui --backend-store-uri {result.tracking_uri}",
            flush=True,
        )


def _discard_fresh_run_dir(run_dir: Path) -> None:
    """Remove the run directory Hydra made for a campaign refused before it started (it holds nothing but
    Hydra's own files), so a refused config leaves nothing behind; a directory with anything else in it (a
    run to resume) is kept."""
    import shutil

    if run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {".hydra", "driver.log"}:
        shutil.rmtree(run_dir, ignore_errors=True)
        with contextlib.suppress(OSError):  # campaigns/, when this run made it: only if empty
            run_dir.parent.rmdir()


@contextmanager
def environment(name: str, value: str) -> Iterator[None]:
    """``name=value`` in this process's environment (a user's own setting wins), put back on leaving."""
    before = os.environ.get(name)
    os.environ.setdefault(name, value)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def main() -> None:
    """The console script: Hydra parses the overrides (``key=value``, ``-m`` for a sweep, ``--help``)."""
    try:
        import hydra
    except ImportError:  # pragma: no cover - depends on the install
        sys.exit("tgms-campaign needs the campaign extra: pip install 'tgms[campaign]'")
    from tgms.pipeline.campaign.overrides import check_overrides

    with _structured_errors():  # Hydra's own composition errors, as the one structured error
        check_overrides(CONF_DIR, sys.argv[1:])
    hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)(_task)()
