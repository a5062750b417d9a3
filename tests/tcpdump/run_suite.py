#!/usr/bin/python3
"""tcpdump's own decode tests, replayed through xdpcap -r.

Usage: python3 tests/tcpdump/run_suite.py PATH/TO/xdpcap

Each line of TESTLIST (tcpdump's format: name, capture, expected output,
options) runs as tcpdump's TESTrun runs it: TZ=GMT0, `-# -n -r CAPTURE`,
with -tttt in front of the options unless they hold SPECIAL_t. The output
must be the expected file byte for byte. Prints one line per test and
exits 1 if any differs.
"""

import difflib
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tests():
    with open(os.path.join(HERE, "TESTLIST")) as f:
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


if __name__ == "__main__":
    sys.exit(main())
