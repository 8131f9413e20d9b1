# Helper of the lit tests: prints the manifest NAME.json that `attnc compile`
# writes, one fact a line, so that FileCheck can check it without depending on
# the JSON's whitespace or key order.
#
#   manifest.py DIR/NAME.json
#
#   name NAME
#   backend B
#   target NAME
#   runtime_dims B S ...
#   input NAME DTYPE [DIMS]          (in kernel argument order)
#   output NAME DTYPE [DIMS]
#   schedule KEY=VALUE ...           (the schedule used, without `measured`)
#   schedule_source SOURCE
import json
import sys


def dims(d):
    return "[" + ", ".join(str(x) for x in d) + "]"


def main(path):
    with open(path) as f:
        m = json.load(f)
    print("name %s" % m["name"])
    print("backend %s" % m["backend"])
    t = m["target"]
    print("target %s" % (t["name"] if isinstance(t, dict) else t))
    print("runtime_dims %s" % " ".join(m.get("runtime_dims", [])))
    for kind in ("inputs", "outputs"):
        for a in m[kind]:
            print("%s %s %s %s" % (kind[:-1], a["name"], a["dtype"], dims(a["dims"])))
    s = m["schedule"]
    print("schedule " + " ".join(
        "%s=%s" % (k, json.dumps(v).replace(" ", "")) for k, v in s.items() if k != "measured"))
    print("schedule_source %s" % m.get("schedule_source"))


if __name__ == "__main__":
    main(sys.argv[1])
