"""Canonical bundles: ``tgms bundle build --dataset NAME --seed S --out DIR`` writes ``eventlog.jsonl``,
``suite.json`` and ``manifest.json`` (byte-identical on any machine, at any time); ``tgms bundle verify
DIR`` replays the log and checks the digest and every hash the manifest records (JSON; exit 1 on a
mismatch, with the structured error naming each failed check)."""

from __future__ import annotations

import argparse

from tgms.engine.api import DATASETS
from tgms.pipeline.console import print_json, progress
from tgms.pipeline.inputs import add_whole, fspath, out_dir
from tgms.pipeline.signals import sigterm_as_interrupt, stop_on_lost_sigterm

HELP = "canonical bundles: `tgms bundle build --dataset NAME --seed S --out DIR`, `tgms bundle verify DIR`"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bundle_command", required=True, metavar="build|verify")
    b = sub.add_parser("build", help="build a bundle (event log + suite + manifest)")
    b.add_argument("--dataset", required=True, choices=DATASETS)
    add_whole(b, "--seed", 0, 2**63 - 1, default=0)
    b.add_argument("--out", required=True, type=fspath, metavar="DIR")
    b.add_argument("--source", type=fspath, default=None, metavar="PATH", help="the SNAP file to read")
    add_whole(b, "--events", 1, 10**9, default=100_000)
    add_whole(b, "--nodes", 2, 10**9, default=1_000)
    b.add_argument("--no-crosscheck", action="store_true", help="skip the brute-force oracle cross-check")
    v = sub.add_parser("verify", help="replay a bundle and check it against its manifest")
    v.add_argument("bundle", type=fspath, metavar="DIR")


def run(args: argparse.Namespace) -> int:
    from tgms.pipeline.campaign.bundle import build_bundle, verify_bundle

    if args.bundle_command == "verify":
        print_json(verify_bundle(args.bundle, progress=progress).to_dict())
        return 0
    out_dir(args.out)
    with sigterm_as_interrupt():  # a stopped build removes its scratch folder
        manifest = build_bundle(
            args.dataset,
            args.seed,
            args.out,
            source=args.source,
            events=args.events,
            nodes=args.nodes,
            crosscheck=not args.no_crosscheck,
            progress=stop_on_lost_sigterm(progress),
        )
    print_json(manifest.model_dump(mode="json", exclude_unset=True, exclude={"planted"}))
    return 0
