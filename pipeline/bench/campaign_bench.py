"""``tgms bench campaign``: the campaign's fan-out on this machine (a benchmark, not a test).

Three figures, on the full CollegeMsg seed-0 bundle (built once under ``--work``) and a local Ray runtime:

(a) **instant endpoint**: the scripted test double answering at once (``--smoke`` replies), one run of
    ``--tasks`` tasks per system through the real path — actors, systems, model client over HTTP, records
    appended and fsynced by the driver — timed end to end: tasks/s. Each actor first runs one untimed
    task, which builds its system (a one-off per actor and cell, reported apart as the warm-up).
(b) **1-second replies, 16 in flight**: the double waits 1 s per reply; 2 actors × 8 tasks in flight over
    ``static_graph_rag`` (one model call per task, so the ideal is exactly 16 tasks/s), after the same
    warm-up: tasks/s and the fraction of that ideal.
(c) **actor start-up**: a fresh pool of one actor, then of ``--actors`` at once, each replaying the
    bundle's event log (received through the object store) into its own store and proving its digest:
    the in-actor replay + digest seconds, and the wall time from creating the actors to the last proof
    (Ray's worker start included). Two actors at once on 2 cores share the CPU.

(d) **smoke, as a user runs it**: ``tgms-campaign experiment=smoke`` in a new directory, as a child
    process, first with an empty cache (``$TGMS_CACHE`` a new directory: the bundle, vector-RAG's
    chunk vectors and the Kùzu graph are all built) and then again in another new directory with that
    cache warm: wall seconds of each, from the command's start to its exit (Ray's start-up and the
    MLflow store's set-up included).

Medians over ``--reps`` repetitions ((d): one run each, it is minutes of CPU). The goals (issues 16 and 26)
are printed beside: (a) ≥ 20 tasks/s, (b) ≥ 0.8 of ideal, (c) ≤ 2 s, (d) ≤ 60 s with an empty cache.
``--parts`` picks the figures (``d`` alone: the smoke figure without the others).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tgms.pipeline import inputs
from tgms.pipeline.bench.report import BenchResult, stamp
from tgms.pipeline.latency.stores import default_work_dir
from tgms.pipeline.table import Table, to_markdown

if TYPE_CHECKING:
    from tgms.pipeline.scoring.suite import Task

HELP = "campaign fan-out: tasks/s (instant and 1-s replies) and actor start-up on CollegeMsg"
GOALS = {
    "instant_tasks_per_s": 20.0,
    "slow_fraction_of_ideal": 0.8,
    "actor_startup_s": 2.0,
    "smoke_empty_cache_s": 60.0,
}
PARTS = "abcd"
#: a smoke run that takes longer than this is stopped and reported as such (it is seconds when healthy)
SMOKE_TIMEOUT_S = 1800
SLOW_REPLY_S = 1.0
SLOW_ACTORS, SLOW_CONCURRENCY = 2, 8  # 16 requests in flight


def add_arguments(p: argparse.ArgumentParser) -> None:
    inputs.add_whole(p, "--tasks", 1, 100_000, default=200, help="tasks per system in (a) (default 200)")
    inputs.add_whole(p, "--slow-tasks", 16, 100_000, default=160, help="tasks in (b) (default 160)")
    inputs.add_whole(p, "--reps", 1, 100, default=3, help="repetitions; medians reported (default 3)")
    inputs.add_whole(p, "--actors", 1, 64, default=2, help="actors in (a) and (c) (default 2)")
    inputs.add_whole(p, "--actor-concurrency", 1, 1024, default=8, help="tasks in flight per actor in (a)")
    p.add_argument(
        "--systems", default="tgms,static_graph_rag", help="systems of (a), comma-separated (default both)"
    )
    p.add_argument("--bundle", metavar="DIR", help="a CollegeMsg bundle to use (default: built under --work)")
    p.add_argument(
        "--parts",
        default=PARTS,
        type=_parts,
        help="figures to measure, e.g. 'd' for smoke alone (default abcd; see the module docstring)",
    )


def _parts(text: str) -> str:
    picked = "".join(sorted(set(text.strip().lower())))
    if not picked or any(c not in PARTS for c in picked):
        raise argparse.ArgumentTypeError(f"--parts takes letters of {PARTS!r}, got {text!r}")
    return picked


def _bundle(args: argparse.Namespace, progress: Callable[[str], None]) -> Path:
    from tgms.pipeline.campaign.bundle import MANIFEST, build_bundle

    if args.bundle:
        return Path(args.bundle)
    out = Path(args.work or default_work_dir()) / "campaign" / "collegemsg-s0"
    if not (out / MANIFEST).exists():
        progress(f"building the CollegeMsg seed-0 bundle into {out} (once, ~30 s) ...")
        shutil.rmtree(out, ignore_errors=True)
        build_bundle("collegemsg", 0, out, progress=progress)
    return out


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    parts = getattr(args, "parts", PARTS)
    data: dict[str, Any] = {"when": stamp()}
    if set(parts) & set("abc"):
        data.update(_fan_out(args, progress, parts))
    if "d" in parts:
        data["smoke"] = _smoke(progress)
    return BenchResult(data, table(data), ("campaign", "Throughput"))


def _fan_out(args: argparse.Namespace, progress: Callable[[str], None], parts: str) -> dict[str, Any]:
    """Figures (a)-(c), each when picked by ``parts``."""
    from tgms.pipeline.campaign.bundle import read_manifest, read_suite
    from tgms.pipeline.campaign.config import ClusterConf
    from tgms.pipeline.campaign.ray_runtime import ray_session

    bundle = _bundle(args, progress)
    manifest = read_manifest(bundle)
    suite = read_suite(bundle)
    tasks = [*suite.splits.dev, *suite.splits.test]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    cluster = ClusterConf(
        kind="local", num_cpus=2, actors=args.actors, actor_concurrency=args.actor_concurrency
    )
    bundles = {"collegemsg": (bundle, manifest)}
    data: dict[str, Any] = {"bundle": str(bundle), "digest": manifest.store_digest}
    with ray_session(cluster), tempfile.TemporaryDirectory(prefix="tgms-bench-campaign-") as scratch:
        work = Path(scratch)
        if "c" in parts:
            progress("(c) actor start-up ...")
            data["startup"] = [_startup(bundles, cluster.model_copy(update={"actors": n}), work, args.reps)
                               for n in sorted({1, args.actors})]  # fmt: skip
        data["instant"] = {}
        for system in systems if "a" in parts else []:
            progress(f"(a) {system}: {args.tasks} tasks, instant replies ...")
            data["instant"][system] = _throughput(
                bundles, cluster, work, tasks[: args.tasks], system, 0.0, args.reps, progress
            )
        if "b" not in parts:
            return data
        slow = ClusterConf(kind="local", actors=SLOW_ACTORS, actor_concurrency=SLOW_CONCURRENCY)
        progress(
            f"(b) static_graph_rag: {args.slow_tasks} tasks, {SLOW_REPLY_S:g}-s replies, 16 in flight ..."
        )
        data["slow"] = _throughput(
            bundles,
            slow,
            work,
            tasks[: args.slow_tasks],
            "static_graph_rag",
            SLOW_REPLY_S,
            args.reps,
            progress,
        )
    ideal = SLOW_ACTORS * SLOW_CONCURRENCY / SLOW_REPLY_S
    data["slow"]["ideal_tasks_per_s"] = ideal
    data["slow"]["fraction_of_ideal"] = round(data["slow"]["tasks_per_s"] / ideal, 3)
    return data


def _smoke(progress: Callable[[str], None]) -> dict[str, Any]:
    """(d): ``tgms-campaign experiment=smoke`` with an empty cache, then a warm one (module docstring)."""
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tgms-bench-smoke-") as scratch:
        env = {**os.environ, "TGMS_CACHE": str(Path(scratch) / "cache")}
        env.pop("MLFLOW_TRACKING_URI", None)  # the embedded default: a SQLite store in the run directory
        for state in ("empty", "warm"):
            cwd = Path(scratch) / state
            cwd.mkdir()
            progress(f"(d) smoke, {state} cache: tgms-campaign experiment=smoke in {cwd} ...")
            cmd = [sys.executable, "-c", "from tgms.pipeline.campaign.driver import main; main()",
                   "experiment=smoke"]  # fmt: skip
            t0 = time.perf_counter()
            code, tail = _run_campaign(cmd, cwd, env)
            seconds = round(time.perf_counter() - t0, 2)
            runs[state] = {"seconds": seconds, "exit_code": code}
            if code != 0:
                runs[state]["tail"] = tail
            progress(f"  {state} cache: exit {code} in {seconds:.1f} s")
    return runs


def _startup(bundles: dict[str, Any], cluster: Any, work: Path, reps: int) -> dict[str, Any]:
    from tgms.models.config import EndpointConfig
    from tgms.pipeline.campaign.endpoints import endpoint_to_dict
    from tgms.pipeline.campaign.executor import start_actors

    endpoint = endpoint_to_dict(EndpointConfig(base_urls=("http://127.0.0.1:9",), model="none"))
    inside, wall = [], []
    for _ in range(reps):
        with start_actors(bundles, endpoint, cluster, work / "startup") as pool:
            inside += [p["seconds"] for p in pool.ready()]
            wall.append(pool.startup_s)
    return {
        "actors": cluster.actors,
        "replay_digest_s_median": round(statistics.median(inside), 3),
        "replay_digest_s_max": round(max(inside), 3),
        "create_to_proof_s_median": round(statistics.median(wall), 3),
        "runs": {"in_actor_s": inside, "wall_s": wall},
    }


def _throughput(
    bundles: dict[str, Any],
    cluster: Any,
    work: Path,
    tasks: list[Task],
    system: str,
    reply_delay_s: float,
    reps: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    from tgms.models.config import ModelConfig
    from tgms.pipeline.campaign.cells import Cell
    from tgms.pipeline.campaign.endpoints import open_model
    from tgms.pipeline.campaign.executor import CellJob, run_jobs, run_settings, start_actors
    from tgms.pipeline.campaign.records import read_records

    model = ModelConfig.model_validate(
        {
            "name": "scripted",
            "kind": "scripted",
            "concurrency": 64,
            "timeout_s": 60,
            "reply_delay_s": reply_delay_s,
        }
    )
    spare = tasks[-cluster.actors :]  # warm-up tasks, outside the timed set
    timed = tasks[: len(tasks) - cluster.actors]
    runs: list[dict[str, Any]] = []
    with open_model(model, None, False) as (endpoint, generation):  # no response cache: every task asks
        for rep in range(reps):
            with start_actors(bundles, endpoint, cluster, work / "systems") as pool:
                cell = Cell("collegemsg", system, model.name, rep)  # a new seed: new requests each rep
                out = work / f"{system}-{reply_delay_s:g}-{rep}"
                settings = run_settings(cell, generation)
                # one task per actor first: each builds its system (index, graph, card) untimed
                warm = CellJob(cell, {}, settings, spare, out / "warm.jsonl", out / "warm-t.jsonl")
                t0 = time.perf_counter()
                run_jobs(pool, [warm])
                build_s = time.perf_counter() - t0
                job = CellJob(cell, {}, settings, timed, out / "r.jsonl", out / "t.jsonl")
                t0 = time.perf_counter()
                stats = run_jobs(pool, [job])
                seconds = time.perf_counter() - t0
            statuses: dict[str, int] = {}
            for r in read_records(job.records_path):
                statuses[r.status] = statuses.get(r.status, 0) + 1
            runs.append(
                {"seconds": round(seconds, 3), "warmup_s": round(build_s, 3), "tasks": stats["finished"],
                 "status": statuses}
            )  # fmt: skip
            progress(f"  rep {rep + 1}: {stats['finished']} tasks in {seconds:.2f} s ({statuses})")
    median_s = statistics.median(r["seconds"] for r in runs)
    return {
        "system": system,
        "tasks": len(timed),
        "warmup_s_median": round(statistics.median(r["warmup_s"] for r in runs), 3),
        "reply_delay_s": reply_delay_s,
        "actors": cluster.actors,
        "actor_concurrency": cluster.actor_concurrency,
        "seconds_median": round(median_s, 3),
        "tasks_per_s": round(len(timed) / median_s, 2),
        "runs": runs,
    }


def _run_campaign(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[int | None, str]:
    """Run one campaign to its end: its exit code (None when stopped at :data:`SMOKE_TIMEOUT_S`) and its
    output's tail. Ctrl-C or SIGTERM of the benchmark stops the campaign in order (SIGTERM: its runs end
    KILLED, its Ray runtime stops) before the benchmark exits; it is never left running on its own."""
    from tgms.pipeline.signals import sigterm_as_interrupt

    log = cwd / "campaign.log"
    with log.open("w", encoding="utf-8") as out, sigterm_as_interrupt():
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            code: int | None = proc.wait(timeout=SMOKE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if proc.poll() is None:  # timed out, or the benchmark was interrupted
                proc.terminate()
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
    return code, (tail if code is not None else f"stopped after {SMOKE_TIMEOUT_S} s: {tail[-1500:]}")


def table(data: dict[str, Any]) -> str:
    rows = []
    for system, r in data.get("instant", {}).items():
        rows.append(
            (
                f"(a) instant replies, {system}",
                f"{r['tasks']} tasks, {r['actors']} actors × {r['actor_concurrency']} "
                f"(after a {r['warmup_s_median']:.1f}-s warm-up)",
                f"{r['tasks_per_s']:.1f} tasks/s",
                f"≥ {GOALS['instant_tasks_per_s']:g} tasks/s",
            )
        )
    s = data.get("slow")
    if s:
        rows.append(
            (
                "(b) 1-s replies, static_graph_rag",
                f"{s['tasks']} tasks, {s['actors']} actors × {s['actor_concurrency']} = 16 in flight",
                f"{s['tasks_per_s']:.2f} tasks/s = {s['fraction_of_ideal']:.2f} of ideal 16",
                f"≥ {GOALS['slow_fraction_of_ideal']:g} of ideal",
            )
        )
    for st in data.get("startup", []):
        rows.append(
            (
                "(c) actor start-up (replay + digest proof)",
                ("1 actor alone" if st["actors"] == 1 else f"{st['actors']} actors at once")
                + ", full CollegeMsg",
                f"{st['replay_digest_s_median']:.2f} s in the actor (max {st['replay_digest_s_max']:.2f}); "
                f"{st['create_to_proof_s_median']:.2f} s creation to last proof",
                f"≤ {GOALS['actor_startup_s']:g} s",
            )
        )
    for state, r in data.get("smoke", {}).items():
        outcome = f"{r['seconds']:.1f} s" + ("" if r["exit_code"] == 0 else f" (exit {r['exit_code']})")
        rows.append(
            (
                f"(d) smoke, {state} cache",
                "tgms-campaign experiment=smoke: 4 systems × 2 seeds, scripted endpoint, mutations",
                outcome,
                f"≤ {GOALS['smoke_empty_cache_s']:g} s" if state == "empty" else "",
            )
        )
    digest = f"; bundle digest {data['digest'][:12]}" if "digest" in data else ""
    head = f"Measured {data['when']}; medians{digest}.\n\n"
    return head + to_markdown(Table.of(["case", "setup", "measured", "goal"], "llll", rows, none=""))
