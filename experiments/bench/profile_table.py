#!/usr/bin/env python3
"""The operators of a `bench_side_by_side --profile FILE` as a Markdown table (standard
library only): self time, its share of the observed wall time, calls and time per call.

    profile_table.py FILE.json [--top 12]"""

import json
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 12
    profile = json.load(open(path))
    print(f"Observed wall time {profile['wall_s']:.1f} s (model loading included).")
    print()
    print("| operator | self s | share | calls | µs per call |")
    print("|---|---|---|---|---|")
    for op in profile["operators"][:top]:
        print(f"| `{op['op']}` | {op['self_s']:.2f} | {100 * op['self_share']:.1f}% | "
              f"{op['calls']} | {1e6 * op['self_s'] / op['calls']:.1f} |")


if __name__ == "__main__":
    main()
