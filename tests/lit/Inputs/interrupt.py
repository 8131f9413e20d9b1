"""Interrupts `attnc` at many points and checks what it leaves behind.

    interrupt.py [--runs N] [--clean-after-kill | --swept-by-next-run]
                 SIGNAL COMMAND ARGS...
        (the command writes into -o DIR or --output-dir DIR, given in ARGS)

The command is run once to learn how long it takes, then N times more (12
unless told) with SIGNAL delivered after evenly spaced fractions of that
time, from 2% to 98%, each run with its
own empty TMPDIR and output directory. After every run the output directory
must hold no temporary file and either nothing or every file a whole run
writes, each identical to the whole run's; for SIGINT and SIGTERM, TMPDIR
must be empty too (SIGKILL cannot clean up, so only the output is checked,
unless --clean-after-kill says the command's temporary files are unnamed, or
--swept-by-next-run says that the next run of the command, uninterrupted, in
the same TMPDIR, removes what the killed one left).
Prints one line per problem and exits 1 if there is any.
"""

import filecmp
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def output_dir(args):
    for flag in ("-o", "--output-dir"):
        if flag in args:
            return args.index(flag) + 1
    sys.exit("interrupt.py: the command has no -o or --output-dir")


def run(args, workdir, delay=None, sig=None, tmp=None):
    """Runs the command with outputs and TMPDIR (unless given) under
    workdir."""
    if tmp is None:
        tmp = os.path.join(workdir, "tmp")
        os.makedirs(tmp)
    args = list(args)
    out = output_dir(args)
    args[out] = os.path.join(workdir, "out")
    env = dict(os.environ, TMPDIR=tmp)
    start = time.monotonic()
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    if delay is not None:
        try:
            process.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            process.send_signal(sig)
    process.wait(timeout=120)
    return time.monotonic() - start, process.returncode


def main():
    args = sys.argv[1:]
    runs = 12
    if args[:1] == ["--runs"]:
        runs, args = int(args[1]), args[2:]
    clean_after_kill = args[:1] == ["--clean-after-kill"]
    swept_by_next_run = args[:1] == ["--swept-by-next-run"]
    if clean_after_kill or swept_by_next_run:
        args = args[1:]
    name, command = args[0], args[1:]
    sig = getattr(signal, name)
    root = tempfile.mkdtemp(prefix="interrupt-")
    problems = []
    try:
        whole = os.path.join(root, "whole")
        seconds, code = run(command, whole)
        if code != 0:
            sys.exit("interrupt.py: the command fails uninterrupted (exit %d)" % code)
        written = sorted(os.listdir(os.path.join(whole, "out")))
        for n in range(runs):
            fraction = 2 + 96 * n // max(runs - 1, 1)
            workdir = os.path.join(root, "run%d" % n)
            run(command, workdir, seconds * fraction / 100.0, sig)
            out = os.path.join(workdir, "out")
            present = sorted(os.listdir(out)) if os.path.isdir(out) else []
            where = "%s after %d%%" % (name, fraction)
            if any(name.endswith(".tmp") for name in present):
                problems.append("%s: temporary files in the output: %s" % (where, present))
            elif present and present != written:
                problems.append("%s: partial output %s (a whole run writes %s)"
                                % (where, present, written))
            else:
                for name in present:
                    if not filecmp.cmp(os.path.join(out, name),
                                       os.path.join(whole, "out", name), shallow=False):
                        problems.append("%s: %s differs from a whole run's" % (where, name))
            tmp = os.path.join(workdir, "tmp")
            if sig == signal.SIGKILL and swept_by_next_run:
                _, code = run(command, os.path.join(workdir, "next"), tmp=tmp)
                if code != 0:
                    problems.append("%s: the next run failed (exit %d)"
                                    % (where, code))
            left = os.listdir(tmp)
            if (sig != signal.SIGKILL or clean_after_kill or
                    swept_by_next_run) and left:
                problems.append("%s: left in TMPDIR: %s" % (where, sorted(left)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
