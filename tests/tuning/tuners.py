#!/usr/bin/env python3
"""attnc tune as processes: a tuner killed with SIGKILL mid-search takes its
running candidate with it and leaves a database that the next run resumes
(it measures only what is missing and loses nothing) and removes the scratch
directory the killed one left, a tuner stopped by SIGINT says how to resume
and leaves nothing in TMPDIR (not even the files of the candidate it
killed), and two tuners writing one database at once both finish with every
candidate recorded once.

    tuners.py --attnc PATH
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

GRAPH = {
    "attnc": 1, "name": "tiny", "dims": {"S": None},
    "inputs": {n: {"shape": [1, 2, "S", 8], "dtype": "f32"} for n in "qkv"},
    "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"}],
    "outputs": ["o"],
}
# Six candidates: query tiles 16..128 with the AVX2 default's blocks. The
# tuners name --target x86-64-avx2 (every machine of the class has AVX2), so
# the default is in the space whatever the host's widest ISA.
SPACE = {
    "attnc_schedule_space": 1, "version": 1,
    "query_tile": [16, 32, 48, 64, 96, 128], "key_tile": [48],
    "score_block": [[2, 6]], "pv_block": [[4, 3]],
    "registers": {"x86-64": 16, "x86-64-avx2": 16, "x86-64-avx512": 32},
}


def records(attnc, db):
    out = subprocess.run([attnc, "tune", "export", "--db", db],
                         capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def environment(pid):
    """Process `pid`'s environment as a dict (empty once it is gone)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as environ:
            entries = environ.read().split(b"\0")
    except OSError:
        return {}
    return dict(e.decode(errors="replace").split("=", 1)
                for e in entries if b"=" in e)


def candidates_of(tuner_pid, hung=False):
    """Processes running as candidates of the tuner `tuner_pid` (with
    `hung`, only the one the test hook --test-hang-candidate stopped)."""
    found = []
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        variables = environment(pid)
        if variables.get("ATTNC_TUNER_PID") == str(tuner_pid) and (
                not hung or variables.get("ATTNC_TEST_HANG") == "1"):
            found.append(pid)
    return found


def wait_for_hung_candidate(tuner, scratch):
    """Until the tuner's hung candidate has loaded its kernel, or 120 s
    passed; then whether its TMPDIR is the tuner's scratch directory under
    `scratch` (where a killed candidate's files go with the tuner's)."""
    deadline = time.time() + 120
    while time.time() < deadline and tuner.poll() is None:
        for pid in candidates_of(tuner.pid, hung=True):
            try:
                with open("/proc/%d/maps" % pid) as maps:
                    loaded = "attnc-kernel-" in maps.read()
            except OSError:
                continue
            if loaded:
                tmpdir = environment(pid).get("TMPDIR", "")
                return (os.path.dirname(tmpdir) == scratch and
                        os.path.basename(tmpdir).startswith("attnc-tune-"))
        time.sleep(0.05)
    return False


def outlived(tuner_pid):
    """Candidates still running a moment after their tuner died (then
    killed, so that a failing check leaves nothing running)."""
    time.sleep(0.5)
    found = candidates_of(tuner_pid)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return found


def wait_for_records(attnc, tuner, db, count):
    """Until `tuner` has stored `count` records, ended, or 120 s passed."""
    deadline = time.time() + 120
    while time.time() < deadline and tuner.poll() is None:
        if os.path.exists(db) and len(records(attnc, db)) >= count:
            return
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attnc", required=True)
    attnc = parser.parse_args().attnc
    failures = []
    with tempfile.TemporaryDirectory() as work:
        graph = os.path.join(work, "tiny.json")
        space = os.path.join(work, "space.json")
        json.dump(GRAPH, open(graph, "w"))
        json.dump(SPACE, open(space, "w"))
        tune = [attnc, "tune", graph, "--target", "x86-64-avx2", "--dim", "S=40",
                "--space", space,
                "--repeat", "3", "--exhaustive"]

        # Kill a tuner once it has stored two candidates, then resume. The
        # resumed tuner removes the scratch directory the killed one left.
        db = os.path.join(work, "killed.db")
        scratch = os.path.join(work, "tmp-killed")
        os.mkdir(scratch)
        in_scratch = dict(os.environ, TMPDIR=scratch)
        # The third candidate hangs once its kernel is loaded, so the kill
        # finds it running.
        tuner = subprocess.Popen(tune + ["--db", db, "--test-hang-candidate=3"],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, env=in_scratch)
        wait_for_records(attnc, tuner, db, 2)
        if not wait_for_hung_candidate(tuner, scratch):
            failures.append("no hung candidate ran in the tuner's scratch")
        tuner.send_signal(signal.SIGKILL)
        tuner.wait()
        orphans = outlived(tuner.pid)
        if orphans:
            failures.append("candidates outlived the killed tuner: %s" % orphans)
        before = records(attnc, db)
        if len(before) < 2:
            failures.append("the killed tuner stored %d records" % len(before))
        abandoned = [f for f in os.listdir(scratch) if f.startswith("attnc-tune-")]
        again = subprocess.run(tune + ["--db", db], capture_output=True,
                               text=True, env=in_scratch)
        left = os.listdir(scratch)
        if len(abandoned) != 1 or left:
            failures.append("scratch directories: %s after the kill, %s after "
                            "resuming" % (abandoned, left))
        after = records(attnc, db)
        if again.returncode != 0:
            failures.append("resume failed: " + again.stderr.strip())
        earlier = [c["candidate"] for c in before]
        if sorted(json.dumps(c["candidate"]) for c in after) != sorted(
                set(json.dumps(c["candidate"]) for c in after)) or len(after) != 6:
            failures.append("after resuming: %d records, not the 6 "
                            "candidates once each" % len(after))
        if not all(c in [r["candidate"] for r in after] for c in earlier):
            failures.append("resuming lost a record")
        # The resumed run skipped what the killed one stored (the default,
        # re-timed each run, aside).
        skipped = len([c for c in earlier if c["query_tile"] != 32])
        if ("%d from earlier runs" % skipped) not in again.stdout:
            failures.append("the resumed run did not skip the %d stored "
                            "candidates: %s" % (skipped, again.stdout.strip()))

        # SIGINT: exit 1 with how to resume, nothing left in TMPDIR.
        scratch = os.path.join(work, "tmp")
        os.mkdir(scratch)
        db = os.path.join(work, "interrupted.db")
        tuner = subprocess.Popen(tune + ["--db", db, "--test-hang-candidate=2"],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, TMPDIR=scratch))
        if not wait_for_hung_candidate(tuner, scratch):
            failures.append("no hung candidate ran in the tuner's scratch")
        tuner.send_signal(signal.SIGINT)
        _, err = tuner.communicate(timeout=120)
        if tuner.returncode != 1 or "interrupted" not in err:
            failures.append("SIGINT: exit %s, %r" % (tuner.returncode, err))
        orphans = outlived(tuner.pid)
        if orphans:
            failures.append("candidates outlived the interrupted tuner: %s"
                            % orphans)
        left = os.listdir(scratch)
        if left:
            failures.append("SIGINT left scratch files: %s" % left)

        # Two tuners on one database at once.
        db = os.path.join(work, "shared.db")
        both = [subprocess.Popen(tune + ["--db", db, "--seed", str(seed)],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
                for seed in (1, 2)]
        for tuner in both:
            _, err = tuner.communicate(timeout=600)
            if tuner.returncode != 0:
                failures.append("a concurrent tuner failed: " + err.strip())
        shared = records(attnc, db)
        if len(shared) != 6 or any(r["outcome"] != "ok" for r in shared):
            failures.append("two tuners left %d records (%s), not 6 ok" % (
                len(shared), [r["outcome"] for r in shared]))

    for failure in failures:
        print("FAIL: " + failure)
    print("tuners: %s" % ("FAIL" if failures else "ok"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
