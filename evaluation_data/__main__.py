"""``python -m evaluation_data <set> [options]``: build one evaluation dataset."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

# The set's name on the command line, and the module that builds it (imported
# only when chosen: the code set's parts are the largest).
BUILDERS = {
    "code": "build_eval_code",
    "plainwords": "build_eval_plainwords",
    "pydocs": "build_eval_pydocs",
    "pysource": "build_eval_pysource",
}
USAGE = (
    f"usage: python -m evaluation_data {{{','.join(BUILDERS)}}} [options]\n"
    "       python -m evaluation_data <set> --help    # the set's options"
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not args or args[0] not in BUILDERS:
        given = f"unknown set {args[0]!r}\n" if args else ""
        print(f"{given}{USAGE}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"evaluation_data.{BUILDERS[args[0]]}")
    build: Callable[[list[str]], int] = module.main
    return build(args[1:])


if __name__ == "__main__":
    sys.exit(main())
