"""`conformance images build|list`; the top-level CLI hands its remaining argv to main()."""

from __future__ import annotations

import argparse
import sys
import time

from conformance.images.engine import EngineUnavailableError, docker_client
from conformance.images.results import ImageBuildError


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except (EngineUnavailableError, ImageBuildError, FileNotFoundError) as exc:
        print(f"conformance images: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance images",
                                     description="Build and list the implementation images (reference and third-party).")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    build = commands.add_parser("build", help="build (or reuse) the base image, the third-party and the reference "
                                              "images, and the suite image (conformance-suite)")
    build.add_argument("--protocol", action="append", dest="protocols", metavar="P",
                       help="only this protocol's images, no suite image (repeatable); default: every protocol "
                            "with an adapter")
    build.add_argument("--suite", action="store_true",
                       help="only the suite image: `docker run --network host conformance-suite run ...`")
    build.add_argument("--suite-reports", action="store_true",
                       help="also the suite image with Java and PySpark for `conformance report` "
                            "(conformance-suite-reports, about 1.5 GB)")
    build.add_argument("--force", action="store_true", help="rebuild everything, ignoring every cache")
    build.set_defaults(run=_build)
    listing = commands.add_parser("list", help="list the images built by this project")
    listing.set_defaults(run=_list)
    return parser


def _build(args: argparse.Namespace) -> int:
    from conformance.images.build import build_images  # keeps `images list` free of build-only imports

    started = time.monotonic()
    # --suite / --suite-reports: the suite image(s), plus the images of any --protocol given; no flag: all
    alone = args.suite or args.suite_reports
    protocols = (args.protocols or []) if alone else args.protocols
    suite = alone or args.protocols is None
    outcomes = build_images(protocols, force=args.force, suite=suite, suite_reports=args.suite_reports,
                            log=lambda line: print(line, flush=True))
    built = sum(outcome.action == "built" for outcome in outcomes)
    print(f"done in {time.monotonic() - started:.1f}s: {built} built, {len(outcomes) - built} reused")
    return 0


def _list(args: argparse.Namespace) -> int:
    from conformance.images.listing import project_images

    client = docker_client(timeout=30)
    try:
        rows = project_images(client)
    finally:
        client.close()
    if not rows:
        print("no images yet: run `conformance images build`")
        return 0
    for row in rows:
        print(f"{row['kind']:<10} {row['protocol']:<14} {row['size_mb']:>5} MB  {row['created']}  {row['tags']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
