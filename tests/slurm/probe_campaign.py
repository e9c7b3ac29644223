"""A plumbing probe run in the driver's place (CAMPAIGN_CMD) by the SLURM tests: it takes the Hydra
overrides slurm/campaign.sbatch passes to ``tgms-campaign``, joins the Ray cluster they name, and from a
Ray task on that cluster asks every replica of ``model.endpoints_file`` for ``/v1/models`` -- the path the
campaign's actors take. It writes what it saw as JSON to $PROBE_OUT; the test asserts on it.

    python tests/slurm/probe_campaign.py cluster=slurm cluster.address=IP:PORT model.endpoints_file=F ...
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path


def main(argv: list[str]) -> int:
    overrides = dict(a.split("=", 1) for a in argv if "=" in a)
    address = overrides.get("cluster.address")
    if address in (None, "null"):
        address = Path(overrides["cluster.address_file"]).read_text().split()[0]
    endpoints: list[str] = []
    if "model.endpoints_file" in overrides:
        endpoints = Path(overrides["model.endpoints_file"]).read_text().split()

    import ray

    ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:

        @ray.remote(num_cpus=0)
        def models_of(urls: list[str]) -> dict[str, list[str]]:
            seen = {}
            for url in urls:
                with urllib.request.urlopen(url + "/v1/models", timeout=10) as resp:
                    seen[url] = [m["id"] for m in json.load(resp)["data"]]
            return seen

        served = ray.get(models_of.remote(endpoints), timeout=60)
        result = {
            "argv": argv,
            "address": address,
            "ray_nodes": sum(1 for n in ray.nodes() if n["Alive"]),
            "served": served,
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        }
    finally:
        ray.shutdown()
    Path(os.environ["PROBE_OUT"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
