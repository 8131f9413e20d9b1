# Helper of explain.test: checks `attnc explain --json` and the text form
# against the graph. Usage: check_explain.py GRAPH.json EXPLAIN.json EXPLAIN.txt
import json
import sys

graph = json.load(open(sys.argv[1]))
kernels = json.load(open(sys.argv[2]))
text = open(sys.argv[3]).read().splitlines()

assert isinstance(kernels, list) and kernels, "expected a non-empty JSON array"
covered = []
for i, kernel in enumerate(kernels):
    assert kernel["kernel"] == i, "kernel %d numbered %r" % (i, kernel["kernel"])
    assert isinstance(kernel["op"], str) and kernel["op"], kernel
    assert kernel["nodes"], "kernel %d covers no node" % i
    covered += kernel["nodes"]
names = [node["name"] for node in graph["nodes"]]
assert sorted(covered) == sorted(names), \
    "nodes covered %r, graph nodes %r" % (covered, names)
assert len(text) == len(kernels), "%d text lines, %d kernels" % (len(text), len(kernels))
for i, (line, kernel) in enumerate(zip(text, kernels)):
    assert line.startswith("kernel %d: " % i), line
    for node in kernel["nodes"]:
        assert node in line, "%r does not name %s" % (line, node)
print("ok: %d kernels cover %d nodes" % (len(kernels), len(names)))
