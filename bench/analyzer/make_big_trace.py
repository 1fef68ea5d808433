"""Builds a large Kineto trace for the analyzer's speed benchmark by repeating a trace recorded on the H200 end to end
(every copy shifted in time past the previous one, correlation ids renumbered). The events are the recorded ones; only
their number is scaled. Usage: make_big_trace.py SRC.json.gz OUT.json MIN_EVENTS"""
import gzip
import json
import sys

src, out, min_events = sys.argv[1], sys.argv[2], int(sys.argv[3])
doc = json.load(gzip.open(src))
events = doc["traceEvents"]
timed = [e for e in events if "ts" in e]
t0 = min(e["ts"] for e in timed)
span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 10.0
max_corr = max((e.get("args", {}).get("correlation", 0) for e in events), default=0) + 1
copies = -(-min_events // len(events))
with open(out, "w") as f:
    f.write('{"schemaVersion": 1, "baseTimeNanoseconds": %d, "traceEvents": [\n' % doc.get("baseTimeNanoseconds", 0))
    first = True
    for k in range(copies):
        for e in events:
            e2 = dict(e)
            if "ts" in e2:
                e2["ts"] = e["ts"] + k * span
            args = e.get("args")
            if args and "correlation" in args:
                e2["args"] = dict(args, correlation=args["correlation"] + k * max_corr)
            if e.get("ph") in ("s", "f") and "id" in e:
                e2["id"] = e["id"] + k * max_corr
            f.write(("" if first else ",\n") + json.dumps(e2, separators=(",", ":")))
            first = False
    f.write("\n]}\n")
print(f"{copies} copies of {len(events)} events = {copies * len(events)} events")
