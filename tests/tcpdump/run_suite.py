#!/usr/bin/python3
"""tcpdump's own decode tests, replayed through xdpcap -r.

Usage: python3 tests/tcpdump/run_suite.py PATH/TO/xdpcap
       python3 tests/tcpdump/run_suite.py --report TESTS_DIR PATH/TO/xdpcap > LEFT_OUT.md

Each line of TESTLIST (tcpdump's format: name, capture, expected output,
options) runs as tcpdump's TESTrun runs it: TZ=GMT0, `-# -n -r CAPTURE`,
with -tttt in front of the options unless they hold SPECIAL_t. The output
must be the expected file byte for byte. Prints one line per test and
exits 1 if any differs.

--report runs the TESTLIST of a whole tcpdump tests/ directory the same
way and writes, as Markdown, every test that is not kept and why: xdpcap
refuses the capture or the options (its line), or it prints what the
tcpdump installed here prints (Debian's 4.99.3) where the branch's
expected output moved on, or the first line where it differs.
"""

import difflib
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tests(directory=HERE):
    with open(os.path.join(directory, "TESTLIST")) as f:
        for line in f:
            fields = line.split(None, 3)
            if not fields or fields[0].startswith("#"):
                continue
            name, capture, expected = fields[:3]
            options = shlex.split(fields[3]) if len(fields) > 3 else []
            yield name, capture, expected, options


def main():
    binary = os.path.abspath(sys.argv[1])
    env = dict(os.environ, TZ="GMT0")
    failed = 0
    count = 0
    for name, capture, expected, options in tests():
        count += 1
        if "SPECIAL_t" in options:
            options.remove("SPECIAL_t")
        else:
            options = ["-tttt"] + options
        argv = [binary, "-#", "-n", "-r", capture] + options
        cp = subprocess.run(argv, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        with open(os.path.join(HERE, expected), "rb") as f:
            want = f.read()
        if cp.returncode == 0 and cp.stdout == want:
            print(f"ok    {name}")
            continue
        failed += 1
        print(f"FAIL  {name}: xdpcap {' '.join(argv[1:])} exited {cp.returncode}: {cp.stderr.decode().strip()}")
        diff = difflib.unified_diff(want.decode(errors="replace").splitlines(),
                                    cp.stdout.decode(errors="replace").splitlines(), "expected", "xdpcap",
                                    lineterm="", n=1)
        for line in list(diff)[:20]:
            print("      " + line)
    print(f"{count - failed} of {count} tcpdump tests print tcpdump's expected output")
    return 1 if failed else 0


def report(directory, binary):
    env = dict(os.environ, TZ="GMT0")
    # By name and expected output: tcpdump reuses a name for -v and plain runs.
    kept = {(name, expected) for name, _, expected, _ in tests()}
    rows = []
    for name, capture, expected, options in tests(directory):
        if (name, expected) in kept:
            continue
        if "SPECIAL_t" in options:
            options.remove("SPECIAL_t")
        else:
            options = ["-tttt"] + options
        args = ["-#", "-n", "-r", capture] + options
        ours = subprocess.run([binary] + args, cwd=directory, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        if ours.returncode != 0:
            why = "refused: " + ours.stderr.decode(errors="replace").strip().splitlines()[-1]
        else:
            theirs = subprocess.run(["tcpdump"] + args, cwd=directory, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, timeout=60).stdout
            if ours.stdout == theirs:
                why = "prints what Debian's tcpdump 4.99.3 prints; the branch's expected output moved on"
            else:
                with open(os.path.join(directory, expected), "rb") as f:
                    want = f.read().decode(errors="replace").splitlines()
                got = ours.stdout.decode(errors="replace").splitlines()
                at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
                line = want[at] if at < len(want) else "(end of output)"
                why = f"differs from line {at + 1}: expected `{line.strip()[:100]}`"
        rows.append(f"| {name} | {' '.join(options)} | {why.replace('|', '/')} |")
    print("# tcpdump tests left out, and why\n")
    print(f"Written by `run_suite.py --report` from tcpdump's tests/ at the commit README.md names; "
          f"{len(rows)} tests.\n")
    print("| test | options | why |")
    print("|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--report":
        sys.exit(report(os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])))
    sys.exit(main())
