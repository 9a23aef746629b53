"""The main job's interop step: every interop matrix, when a docker engine answers.

    python -m conformance.images.interop_job --out out/main/interop

With an engine: builds the third-party images it needs (cached by content hash) and runs
`conformance interop --build` (every protocol with two or more implementations), its output in
OUT/interop.log, the matrices in OUT/<protocol>/interop.html.  Without one: OUT/skipped.txt holds
the one line the main job's summary prints.  Exit 0 either way: third-party findings, and pairs
that could not run, are results of the matrices, not failures of the main job (as the pyzmq mc0
run is not); the summary says where they are.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
from pathlib import Path

from conformance.images.engine import ENGINE_SCRIPT, engine_answers

SKIPPED = "skipped.txt"
NO_ENGINE = f"skipped: no docker engine (bash {ENGINE_SCRIPT} starts one)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / SKIPPED).unlink(missing_ok=True)
    if not engine_answers():
        (args.out / SKIPPED).write_text(NO_ENGINE + "\n")  # the summary says it, in one line
        return 0
    from conformance.images.interop import main as interop_main
    log = args.out / "interop.log"
    with log.open("w") as stream, contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        try:
            code = interop_main(["--build", "--out", str(args.out)])
        except Exception:  # noqa: BLE001 - whatever broke, the reports still get written; the log has it
            traceback.print_exc()
            code = "an exception"
    print(f"interop matrices: exit {code} (log: {log})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
