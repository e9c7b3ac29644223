"""``tgms bench planner``: a planner configuration with a model, measured as a campaign (issue 25, item 6).

Per configuration (system × ablation) on a stratified dev slice: first-emission plan validity, validity
after repair, the repeat rate of repair replies, accuracy with a 95% bootstrap interval and its
denominator, abstentions and model errors, median and p90 seconds per task, tokens per task; the header
records the machine (cores, memory, CPU model), the load average at the start and the end, the model and
its file's SHA-256, and the date.

It runs **as a campaign** (:func:`pipeline.campaign.driver.run_campaign`): the config is composed from
``conf/`` like ``tgms-campaign``'s, so the model entries, the response cache, the Ray actors, MLflow and
resume all come from there. A benchmark killed after two hours resumes where it stopped when run again
with the same options (the run directory is derived from them, under ``--work``), and a rerun of a
finished one sends no request (the response cache answers). MLflow gets the campaign's runs as usual
plus, on the parent run, this table as an artifact and the machine and load as tags.

The tasks: ``--tasks N`` is the ``stratified-N`` slice of the split (:mod:`pipeline.tasks.slices`: every
family, the probes among them, templates taking turns); ``--tasks FILE`` runs the task ids listed in the
file. The same slice is ``experiment.slice=stratified-N`` in a ``tgms-campaign`` config.

Ablation switches: ``--contracts``, ``--units``, ``--constrained`` (``on``/``off``) make one extra tgms
configuration beside the named ``--ablations``; ``--repair-budget`` applies to every system of the run
(and names the run directory: records made with another budget are never mixed in).

``--questions N`` runs a stratified sample of N analyst questions of the suite's data set instead
(tests/analyst, gold by their SQL, their plans never shown; :mod:`pipeline.bench.analyst_bundle`); it
needs a checkout (the questions live with the tests).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError
from tgms.models.config import ModelConfig
from tgms.pipeline import inputs
from tgms.pipeline.bench.report import BenchResult
from tgms.pipeline.table import Table

HELP = "a planner configuration with a model: plan validity, repeat rate, accuracy, s/task (a campaign)"
SECTION = ("planner-bench", "Planner with a model: `tgms bench planner`")
EXPERIMENT = "bench-planner"
SWITCHES = ("contracts", "units", "constrained")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        required=True,
        help="a conf/model/ entry (qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, local, ...) or, with --api-base, "
        "the name a running server serves",
    )
    p.add_argument(
        "--api-base",
        action="append",
        metavar="URL",
        help="use a server already running (OpenAI-compatible) instead of starting one; repeatable",
    )
    p.add_argument(
        "--tasks",
        default="30",
        metavar="N|FILE",
        help="N: the stratified-N slice of the split (every family and the probes; default 30); "
        "FILE: the task ids it lists, one per line",
    )
    p.add_argument("--suite", default="collegemsg", help="the suite (conf/suite/; default collegemsg)")
    p.add_argument(
        "--questions",
        type=int,
        metavar="N",
        help="instead of the suite's tasks: a stratified sample of N analyst questions of its data set "
        "(tests/analyst; gold by their SQL, their plans never shown; pipeline/bench/analyst_bundle.py)",
    )
    p.add_argument("--split", default="dev", choices=("dev", "test", "all"), help="the split (default dev)")
    p.add_argument(
        "--systems",
        default="tgms",
        help="systems, comma-separated (tgms, vector_rag, static_graph_rag, text_to_cypher; default tgms)",
    )
    p.add_argument(
        "--ablations",
        default="none",
        help="named tgms ablations of conf/ablation/, comma-separated (default none)",
    )
    for name in SWITCHES:
        p.add_argument(
            f"--{name}",
            choices=("on", "off"),
            help=f"tgms switch {name!r}: adds the configuration with it set (conf/ablation/ switches)",
        )
    inputs.add_whole(p, "--repair-budget", 0, 10, default=3, help="repairs after the first attempt (3)")
    inputs.add_whole(p, "--seed", 0, 2**31 - 1, default=0, help="the model's sampling seed (default 0)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other tgms-campaign override (e.g. cluster.num_cpus=2, model.timeout_s=1800); repeatable",
    )


# -- the campaign config -------------------------------------------------------------------------------
def _csv(text: str) -> list[str]:
    return [s.strip() for s in text.split(",") if s.strip()]


def _selection(tasks: str) -> tuple[str | None, str | None]:
    """(slice, task-list file) of ``--tasks``."""
    if tasks.isdigit():
        if int(tasks) < 1:
            raise InvalidArgError("--tasks must be at least 1", value=tasks)
        return f"stratified-{int(tasks)}", None
    path = Path(tasks)
    if not path.is_file():
        raise InvalidArgError(f"--tasks is neither a number nor a task-list file: {tasks}", value=tasks)
    return None, str(path.resolve())


def switch_ablation(args: argparse.Namespace) -> tuple[str, dict[str, bool]] | None:
    """The extra tgms configuration the switch options ask for, as (ablation name, switches)."""
    chosen = {k: getattr(args, k) == "on" for k in SWITCHES if getattr(args, k) is not None}
    if not chosen:
        return None
    return "sw-" + ".".join(f"{k}-{'on' if v else 'off'}" for k, v in sorted(chosen.items())), chosen


def run_key(args: argparse.Namespace) -> str:
    """The run directory's name: what makes two runs' records interchangeable (suite, model, split, seed,
    repair budget, the extra overrides). Systems, ablations and the slice are left out on purpose: each
    cell has its own records file, and tasks outside the slice are ignored when read back."""
    what = f"{args.suite}-analyst{args.questions}" if getattr(args, "questions", None) else args.suite
    split = "test" if getattr(args, "questions", None) else args.split
    key = f"{what}.{args.model}.{split}.s{args.seed}.r{args.repair_budget}"
    if args.set:
        key += "." + hashlib.sha256("\n".join(sorted(args.set)).encode()).hexdigest()[:8]
    return key.replace("/", "-")


def compose(args: argparse.Namespace, run_dir: Path, analyst_bundle: Path | None = None) -> tuple[Any, str]:
    """The validated campaign config of this benchmark and its resolved YAML; with ``analyst_bundle``, the
    campaign runs that bundle's questions (its test split, every one) instead of the suite's slice."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from tgms.pipeline.campaign.config import validate
    from tgms.pipeline.campaign.driver import CONF_DIR
    from tgms.pipeline.campaign.overrides import composition_error

    known_model = (CONF_DIR / "model" / f"{args.model}.yaml").is_file()
    if not known_model and not args.api_base:
        known = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
        raise InvalidArgError(
            f"--model {args.model!r} is not a conf/model/ entry; give --api-base to use a running server",
            known=known,
        )
    overrides = ["experiment=main", "run.dir=.", *(["model=" + args.model] if known_model else []), *args.set]
    try:  # a --set Hydra refuses is the one structured error, as for tgms-campaign
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = hydra_compose("config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as exc:
        raise composition_error(CONF_DIR, exc, overrides) from None
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    if args.api_base:
        base = raw["model"] if known_model else {"name": args.model, "flavour": "openai"}
        raw["model"] = {**base, "kind": "endpoint", "api_base": list(args.api_base)}
    slice_, task_list = _selection(args.tasks) if analyst_bundle is None else (None, None)
    raw["experiment"] = {
        **raw["experiment"],
        "name": EXPERIMENT,
        "description": "tgms bench planner: a planner configuration with a model on a stratified slice",
        "split": args.split if analyst_bundle is None else "test",
        "per_family": None,
        "limit": None,
        "slice": slice_,
        "task_list": task_list,
        "evaluate": True,
        "repair_budget": args.repair_budget,
        "mutations": {**raw["experiment"]["mutations"], "enabled": False},
        "ops_bench": {**raw["experiment"]["ops_bench"], "enabled": False},
    }
    ablations = _csv(args.ablations)
    extra = switch_ablation(args)
    if extra is not None:
        name, switches = extra
        raw["catalog"]["ablations"][name] = {"description": f"tgms bench planner switches {switches}",
                                             "switches": switches}  # fmt: skip
        ablations.append(name)
    suite = args.suite
    if analyst_bundle is not None:
        suite = f"{args.suite}_analyst"
        raw["catalog"]["suites"][suite] = {
            **raw["catalog"]["suites"][args.suite],
            "bundle": str(analyst_bundle),
        }
    raw.update(suites=[suite], systems=_csv(args.systems), seeds=[args.seed], ablations=ablations)
    raw["run"] = {**raw["run"], "dir": str(run_dir), "print_tables": False}
    return validate(raw), OmegaConf.to_yaml(OmegaConf.create(raw))


# -- machine facts -------------------------------------------------------------------------------------
def machine() -> dict[str, Any]:
    """Cores, memory, CPU model and host: what the seconds per task depend on."""
    cpu, mem_kib = platform.processor() or platform.machine(), None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
                break
    except OSError:  # not Linux: platform's answer stands
        pass
    return {
        "host": platform.node(),
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1) if mem_kib else None,
        "cpu": cpu,
        "python": platform.python_version(),
    }


def load_average() -> list[float]:
    """``uptime``'s load averages (1, 5, 15 min): on 2 shared cores they explain the seconds per task."""
    return [round(x, 2) for x in os.getloadavg()]


def model_facts(model: ModelConfig) -> dict[str, Any]:
    from tgms.models.local import resolve_engine

    gen, serving = model.generation, model.serving
    f = gen.model_file
    local = serving.kind == "local"
    check = "checked before the server started" if local else "configured, not checked here"
    return {
        "name": model.name,
        "kind": serving.kind,
        "engine": resolve_engine(serving.local_engine) if local else None,
        "served_name": gen.served,
        "api_base": list(serving.api_base),
        "quantization": gen.quantization,
        "params_b": model.params_b,
        "temperature": gen.temperature,
        "max_tokens": gen.max_tokens,
        "max_model_len": gen.max_model_len,
        "sha256": f.sha256 if f is not None else None,
        "sha256_check": check if f is not None else None,
    }


# -- the benchmark -------------------------------------------------------------------------------------
def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    from tgms.pipeline.bench.planner_table import cell_row, markdown, row_key, table
    from tgms.pipeline.campaign.driver import run_campaign, tracking_target
    from tgms.pipeline.campaign.tracking import CampaignTracker, git_revision
    from tgms.pipeline.latency.stores import default_work_dir

    base = Path(args.work or default_work_dir()).resolve() / "planner"
    run_dir = base / "runs" / run_key(args)
    analyst = _analyst_bundle(args, base, progress) if args.questions else None
    config, resolved = compose(args, run_dir, analyst)
    progress(f"tgms bench planner: campaign run directory {run_dir} (rerun the same command to resume)")
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    code = git_revision()
    load_start = load_average()
    t0 = time.perf_counter()
    # bundles and the MLflow store sit beside the run directories, shared by every configuration
    result = run_campaign(config, base, resolved)
    seconds = time.perf_counter() - t0
    load_end = load_average()
    rows = [cell_row(c.cell.system, c.cell.ablation, c.records) for c in result.cells]
    rows.sort(key=row_key)
    ids = sorted({r.task_id for c in result.cells for r in c.records})
    families = Counter(
        str(r.family) for c in result.cells[:1] for r in c.records
    )  # every cell runs the same tasks; the first one's records name their families
    exp = config.experiment
    measured = _measurement(
        run_dir, sum(len(c.records) for c in result.cells), when, seconds, load_start, load_end, code
    )
    data: dict[str, Any] = {
        "bench": "planner",
        **measured,
        "machine": machine(),
        "model": model_facts(config.model),
        "run": {
            "suite": args.suite,
            "split": exp.split,
            "selection": exp.slice or f"task list {exp.task_list}",
            "n_tasks": len(ids),
            "families": dict(sorted(families.items())),
            "seed": args.seed,
            "repair_budget": exp.repair_budget,
            "switches": (switch_ablation(args) or (None, None))[1],
            "systems": config.systems,
            "ablations": config.ablations,
            "run_dir": str(run_dir),
            "mlflow_run_id": result.parent_run_id,
            "tracking_uri": result.tracking_uri,
            "task_ids": ids,
        },
        "rows": rows,
    }
    md = markdown(data)
    _log_mlflow(config, base, result, data, table(data), CampaignTracker, tracking_target)
    infra = sum(r["infra"] for r in rows)
    if infra:
        progress(f"{infra} task(s) ended in an infrastructure error (not scored): rerun to retry them")
    return BenchResult(data, md, SECTION, exit_code=1 if infra else 0)


def _analyst_bundle(args: argparse.Namespace, base: Path, progress: Callable[[str], None]) -> Path:
    """The analyst bundle of ``--questions N`` under ``<work>/planner/bundles`` (built once), with the train
    split of the suite's own bundle (built or verified first) for retrieved worked plans."""
    from tgms.pipeline.bench.analyst_bundle import build_analyst_bundle
    from tgms.pipeline.campaign.bundle import train_split
    from tgms.pipeline.campaign.config import SuiteConf
    from tgms.pipeline.campaign.driver import CONF_DIR, ensure_bundle, suite_key

    conf_file = CONF_DIR / "suite" / f"{args.suite}.yaml"
    if not conf_file.is_file():
        raise InvalidArgError(f"--suite {args.suite!r} is not a conf/suite/ entry", suite=args.suite)
    import yaml

    suite_conf = SuiteConf(**yaml.safe_load(conf_file.read_text(encoding="utf-8")))
    bundles = base / "bundles"
    suite_dir, _ = ensure_bundle(args.suite, suite_conf, bundles)
    out = bundles / f"{suite_key(args.suite, suite_conf)}-analyst{args.questions}"
    path, _ = build_analyst_bundle(args.suite, args.questions, out, train_split(suite_dir), progress)
    return path


def _measurement(
    run_dir: Path,
    n_records: int,
    when: str,
    seconds: float,
    start: list[float],
    end: list[float],
    code: str,
) -> dict[str, Any]:
    """When the figures were measured, how long it took, at what load and with which source revision
    (``code``, taken when the run started: its task actors imported that source). A rerun that only
    rebuilds the table from finished records (no task ran) keeps the measuring run's facts, saved in the run
    directory, and says when it was rebuilt: the load of a 3-second rebuild says nothing about a 10-minute
    run."""
    path = run_dir / "measured.json"
    now = {"when": when, "seconds": round(seconds, 1), "load": {"start": start, "end": end}, "code": code}
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("n_records") == n_records:
            return {**{k: saved.get(k, "unknown") for k in now}, "rebuilt": when}
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**now, "n_records": n_records}), encoding="utf-8")
    return now


def _log_mlflow(
    config: Any, base: Path, result: Any, data: dict[str, Any], tbl: Table, tracker_cls: Any, target: Any
) -> None:
    """The table and the JSON on the campaign's parent run, the machine and load as its tags, and the
    figures the campaign does not log (valid after repair, p50/p90 seconds) on each cell's run."""
    uri, experiment, artifacts = target(config, base)
    tracker = tracker_cls(uri, experiment, artifacts)
    parent = result.parent_run_id
    tracker.log_tables(parent, {"bench_planner": tbl})
    tracker.log_text(parent, "bench_planner.json", json.dumps(data, indent=1, sort_keys=True))
    m = data["machine"]
    tracker.set_tags(
        parent,
        {
            "tgms.bench": "planner",
            "tgms.bench.machine": f"{m['cores']} cores, {m['memory_gib']} GiB, {m['cpu']}",
            "tgms.bench.load_start": "/".join(map(str, data["load"]["start"])),
            "tgms.bench.load_end": "/".join(map(str, data["load"]["end"])),
        },
    )
    by_cell = {(r["system"], r["ablation"]): r for r in data["rows"]}
    for c in result.cells:
        row = by_cell[(c.cell.system, c.cell.ablation)]
        metrics = {
            "valid_after_repair_num": row["valid_after_repair"]["num"],
            "valid_after_repair_den": row["valid_after_repair"]["den"],
            "abstained": row["abstained"],
            "model_errors": row["model_error"],
        }
        if row["valid_after_repair"]["value"] is not None:
            metrics["valid_after_repair"] = row["valid_after_repair"]["value"]
        for key in ("seconds_median", "seconds_p90"):
            if row[key] is not None:
                metrics[f"latency_{key.removeprefix('seconds_')}_s"] = row[key]
        tracker.log_metrics(c.run_id, metrics)
