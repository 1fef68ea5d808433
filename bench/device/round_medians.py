#!/usr/bin/env python3
"""Medians of interleaved A/B rounds logged by the device scripts as `round N LABEL: {json}` lines.

  round_medians.py LOG FIELD LABEL_A LABEL_B

Prints the median of FIELD for each label and their ratio B/A, with the round count."""
import json
import re
import statistics
import sys


def main():
    log, field, a, b = sys.argv[1:5]
    rows = {a: [], b: []}
    pat = re.compile(r"round \d+ (.+?): (\{.*\})")
    for line in open(log):
        m = pat.match(line)
        if m and m.group(1) in rows:
            rows[m.group(1)].append(json.loads(m.group(2))[field])
    if not rows[a] or not rows[b]:
        sys.exit(f"no rounds of {a!r} and {b!r} in {log}")
    ma, mb = statistics.median(rows[a]), statistics.median(rows[b])
    print(f"{field} median: {a} {ma:.4f}, {b} {mb:.4f}, ratio {mb / ma:.4f} (n={len(rows[a])}/{len(rows[b])})")


if __name__ == "__main__":
    main()
