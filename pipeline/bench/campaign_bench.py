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

Medians over ``--reps`` repetitions. The goals (issue 16) are printed beside: (a) ≥ 20 tasks/s,
(b) ≥ 0.8 of ideal, (c) ≤ 2 s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.bench.report import BenchResult, markdown_table, stamp
from pipeline.bench.stores import default_work_dir
from pipeline.cli import inputs

HELP = "campaign fan-out: tasks/s (instant and 1-s replies) and actor start-up on CollegeMsg"
GOALS = {"instant_tasks_per_s": 20.0, "slow_fraction_of_ideal": 0.8, "actor_startup_s": 2.0}
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


def _bundle(args: argparse.Namespace, progress: Callable[[str], None]) -> Path:
    from pipeline.campaign.bundle import MANIFEST, build_bundle

    if args.bundle:
        return Path(args.bundle)
    out = Path(args.work or default_work_dir()) / "campaign" / "collegemsg-s0"
    if not (out / MANIFEST).exists():
        progress(f"building the CollegeMsg seed-0 bundle into {out} (once, ~30 s) ...")
        shutil.rmtree(out, ignore_errors=True)
        build_bundle("collegemsg", 0, out, progress=progress)
    return out


def main(args: argparse.Namespace, progress: Callable[[str], None]) -> BenchResult:
    from pipeline.campaign.bundle import SUITE, read_manifest
    from pipeline.campaign.config import ClusterConf
    from pipeline.campaign.ray_runtime import ray_session

    bundle = _bundle(args, progress)
    manifest = read_manifest(bundle)
    suite = json.loads((bundle / SUITE).read_text(encoding="utf-8"))
    tasks = [*suite["splits"]["dev"], *suite["splits"]["test"]]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    cluster = ClusterConf(
        kind="local", num_cpus=2, actors=args.actors, actor_concurrency=args.actor_concurrency
    )
    bundles = {"collegemsg": (bundle, manifest)}
    data: dict[str, Any] = {"when": stamp(), "bundle": str(bundle), "digest": manifest["store_digest"]}
    with ray_session(cluster), tempfile.TemporaryDirectory(prefix="tgms-bench-campaign-") as scratch:
        work = Path(scratch)
        progress("(c) actor start-up ...")
        data["startup"] = [_startup(bundles, cluster.model_copy(update={"actors": n}), work, args.reps)
                           for n in sorted({1, args.actors})]  # fmt: skip
        data["instant"] = {}
        for system in systems:
            progress(f"(a) {system}: {args.tasks} tasks, instant replies ...")
            data["instant"][system] = _throughput(
                bundles, cluster, work, tasks[: args.tasks], system, 0.0, args.reps, progress
            )
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
    return BenchResult(data, table(data), ("campaign", "Throughput"))


def _startup(bundles: dict[str, Any], cluster: Any, work: Path, reps: int) -> dict[str, Any]:
    from models.config import EndpointConfig
    from pipeline.campaign.endpoints import endpoint_to_dict
    from pipeline.campaign.executor import start_actors

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
    tasks: list[dict[str, Any]],
    system: str,
    reply_delay_s: float,
    reps: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    from pipeline.campaign.cells import Cell
    from pipeline.campaign.config import ModelConf
    from pipeline.campaign.endpoints import open_model
    from pipeline.campaign.executor import CellJob, run_jobs, run_settings, start_actors
    from pipeline.campaign.records import read_records

    model = ModelConf(
        name="scripted", kind="scripted", concurrency=64, timeout_s=60, reply_delay_s=reply_delay_s
    )
    spare = tasks[-cluster.actors :]  # warm-up tasks, outside the timed set
    timed = tasks[: len(tasks) - cluster.actors]
    runs = []
    with open_model(model, None, False) as (endpoint, window):  # no response cache: every task asks
        for rep in range(reps):
            with start_actors(bundles, endpoint, cluster, work / "systems") as pool:
                cell = Cell("collegemsg", system, model.name, rep)  # a new seed: new requests each rep
                out = work / f"{system}-{reply_delay_s:g}-{rep}"
                settings = run_settings(cell, model, window)
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
                statuses[r["status"]] = statuses.get(r["status"], 0) + 1
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


def table(data: dict[str, Any]) -> str:
    rows = []
    for system, r in data["instant"].items():
        rows.append(
            (
                f"(a) instant replies, {system}",
                f"{r['tasks']} tasks, {r['actors']} actors × {r['actor_concurrency']} "
                f"(after a {r['warmup_s_median']:.1f}-s warm-up)",
                f"{r['tasks_per_s']:.1f} tasks/s",
                f"≥ {GOALS['instant_tasks_per_s']:g} tasks/s",
            )
        )
    s = data["slow"]
    rows.append(
        (
            "(b) 1-s replies, static_graph_rag",
            f"{s['tasks']} tasks, {s['actors']} actors × {s['actor_concurrency']} = 16 in flight",
            f"{s['tasks_per_s']:.2f} tasks/s = {s['fraction_of_ideal']:.2f} of ideal 16",
            f"≥ {GOALS['slow_fraction_of_ideal']:g} of ideal",
        )
    )
    for st in data["startup"]:
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
    head = f"Measured {data['when']}; medians; bundle digest {data['digest'][:12]}.\n\n"
    return head + markdown_table(["case", "setup", "measured", "goal"], "llll", rows)
