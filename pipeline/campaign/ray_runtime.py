"""The Ray runtime a campaign runs on: a local one started and stopped here, or a cluster joined and left.

``cluster.kind == "local"`` starts Ray on this machine (no dashboard: it costs ~0.3 GB and a port we do not
use; worker logs stay in Ray's session directory instead of flooding the driver's terminal) and shuts it
down on leaving, on errors and on Ctrl-C. Ray 2.60 turns token authentication on by default, which a
local runtime does not need: ``RAY_AUTH_MODE=disabled`` is set for it unless the user set the variable.
``ray``/``slurm`` join a running cluster at the address read from ``address_file`` (which
``slurm/ray_cluster.sbatch`` writes), else at ``address``, and only disconnect: the cluster belongs to
whoever started it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from tgms.engine.api import InvalidArgError, NotFoundError
from tgms.pipeline.campaign.config import ClusterConf


def import_ray() -> ModuleType:
    """The ``ray`` module, or ``E_NOT_FOUND`` naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise NotFoundError(
            "the campaign needs Ray, which is not installed: pip install -e '.[campaign]'",
            package="ray",
            extra="campaign",
        ) from exc
    return ray


def cluster_address(cluster: ClusterConf) -> str:
    """The address to join for kind ray/slurm: the first line of ``address_file`` when one is set (it names
    this allocation's head, written by slurm/ray_cluster.sbatch, and is more specific than the ``auto``
    default of ``address``), else ``address``."""
    if cluster.address_file:
        path = Path(cluster.address_file)
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError as exc:
            raise NotFoundError(
                f"cluster.address_file {path} does not exist (is the Ray cluster job running?)",
                path=str(path),
            ) from exc
        if text:
            return text.splitlines()[0].strip()
        raise InvalidArgError(f"cluster.address_file {path} is empty", path=str(path))
    if cluster.address:
        return cluster.address
    raise InvalidArgError(
        f"cluster kind {cluster.kind} joins a running Ray cluster: "
        "set cluster.address or cluster.address_file",
        kind=cluster.kind,
    )


@contextmanager
def ray_session(cluster: ClusterConf) -> Iterator[dict[str, Any]]:
    """Ray initialized for ``cluster``; yields ``{"kind", "address", "cpus", "nodes"}``.

    A runtime that is already initialized in this process (a test session's) is used as is and left
    running: whoever started it stops it."""
    ray = import_ray()
    if ray.is_initialized():
        yield _describe(ray, cluster.kind, started=False)
        return
    # Ray's core worker installs abseil's failure-signal handler in the driver too: on SIGTERM it prints a
    # native "SIGTERM received" dump and the process ends in SIGABRT (exit 134) after the driver's own
    # handler has run, so a stopped campaign looked like a crash. The driver handles SIGTERM itself
    # (pipeline.signals.sigterm_as_interrupt): the handler stays off for it. Ray reads its environment
    # variable once, into a module constant that ray.init consults: the constant is set, not the variable,
    # which the workers Ray starts would inherit (they keep their crash dumps). A user who sets the
    # variable to 0 keeps the handler in the driver too.
    if os.environ.get("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1").lower() not in ("0", "false"):
        from ray._private import ray_constants

        ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
    # ray.init replaces the driver's SIGTERM handler with sys.exit(15): the campaign's own (which stops it
    # in order, runs ended as KILLED) is put back once Ray is up
    sigterm = (
        signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    )
    if cluster.kind == "local":
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(
            # "local": always a runtime of its own. Without it ray.init joins the cluster a `ray start` on
            # this machine left in /tmp/ray/ray_current_cluster (or $RAY_ADDRESS), and fails there on
            # num_cpus: a CI run lost 8 tests to the SLURM layout test's `ray start` beside it
            address="local",
            num_cpus=cluster.num_cpus or os.cpu_count() or 1,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    else:
        address = cluster_address(cluster)
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    if sigterm is not None:
        signal.signal(signal.SIGTERM, sigterm)
    try:
        yield _describe(ray, cluster.kind, started=True)
    finally:
        # for a joined cluster this only disconnects this driver; the cluster keeps running
        ray.shutdown()


def actors_per_suite(cluster: ClusterConf, cluster_cpus: float, n_suites: int) -> int:
    """How many task actors to start per suite: ``cluster.actors``, capped so that every suite's actors
    fit the cluster's CPUs at ``actor_cpus`` each (at least one per suite). Ray would otherwise leave the
    surplus pending for CPUs that never come, and the driver would wait its whole start-up timeout."""
    if cluster.actor_cpus <= 0 or cluster_cpus <= 0:
        return cluster.actors
    fit = int(cluster_cpus / cluster.actor_cpus / max(1, n_suites) + 1e-9)
    return max(1, min(cluster.actors, fit))


def _describe(ray: ModuleType, kind: str, *, started: bool) -> dict[str, Any]:
    resources = ray.cluster_resources()
    return {
        "kind": kind,
        "address": ray.get_runtime_context().gcs_address,
        "cpus": resources.get("CPU", 0.0),
        "nodes": len([n for n in ray.nodes() if n.get("Alive")]),
        "started_here": started,
    }
