# Helper of check-all-examples.test: runs `attnc check` on every example graph.
import glob
import json
import os
import subprocess
import sys

failures = 0
paths = sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))
for path in paths:
    with open(path) as f:
        graph = json.load(f)
    run = subprocess.run(["attnc", "check", path], capture_output=True, text=True)
    lines = run.stdout.splitlines()
    problems = []
    if run.returncode != 0:
        problems.append("exit %d" % run.returncode)
    if run.stderr:
        problems.append("stderr: %r" % run.stderr)
    if not lines or not lines[0].startswith(path + ": " + graph["name"] + " is valid: "):
        problems.append("no 'is valid' header")
    if len(lines) != 1 + len(graph["nodes"]):
        problems.append("%d lines for %d nodes" % (len(lines), len(graph["nodes"])))
    for node, line in zip(graph["nodes"], lines[1:]):
        if not line.startswith("  %s = %s(" % (node["name"], node["op"])):
            problems.append("bad summary line %r" % line)
    if problems:
        failures += 1
        print("FAIL %s: %s" % (path, "; ".join(problems)))
print("checked %d example graphs" % len(paths))
sys.exit(1 if failures or not paths else 0)
