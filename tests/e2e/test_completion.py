#!/usr/bin/python3
"""Shell completion: the bash completion run for real, the zsh one checked.

Usage (root): /usr/bin/python3 tests/e2e/test_completion.py PATH/TO/xdpcap [COMPLETIONS_DIR]

bash (through bash-completion, inside the capture namespace of a NetLab):
`xdpcap -i <TAB>` offers exactly that namespace's interfaces (cap0, lo) and
`-i ca<TAB>` only cap0; `xdpcap -<TAB>` offers exactly the options of
`xdpcap --help`; -Q, --direction (also as --direction=) and --xdp-mode offer
their values; -w offers files and "-", -F files; -Z offers user names.
zsh (an interactive zsh in a pseudo-terminal, tests/e2e/zsh_complete.zsh, in
the same namespace): the same interfaces, options, values and files.
"""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "man"))
import netlab as N  # noqa: E402
from check_man import extract_options  # noqa: E402

COMPLETIONS = os.path.join(HERE, "..", "..", "completions")
HARNESS = os.path.join(HERE, "bash_complete.sh")
ZSH_HARNESS = os.path.join(HERE, "zsh_complete.zsh")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"


def complete(lab, bash_file, words, cwd=None):
    cp = subprocess.run(["ip", "netns", "exec", lab.cap_ns, "bash", "--norc", "--noprofile",
                         HARNESS, bash_file] + words,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        cwd=cwd, timeout=20)
    N.check(cp.returncode == 0, f"completion of {words!r} runs", cp.stderr)
    return sorted(line for line in cp.stdout.splitlines() if line)


def zcomplete(lab, fpath_dir, line, cwd=None):
    cp = subprocess.run(["ip", "netns", "exec", lab.cap_ns, "zsh", "-f", ZSH_HARNESS, fpath_dir, line],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        cwd=cwd, timeout=20, env=dict(os.environ, TERM="dumb"))
    N.check(cp.returncode == 0, f"zsh completion of {line!r} runs", cp.stderr)
    return sorted(line for line in cp.stdout.splitlines() if line)


def test(binary):
    comp_dir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else COMPLETIONS
    bash_file = os.path.join(comp_dir, "xdpcap.bash")
    zsh_file = os.path.join(comp_dir, "_xdpcap")
    if not os.path.isfile(BASH_COMPLETION):
        raise N.TestSkip(f"{BASH_COMPLETION} missing (package bash-completion)")
    help_text = N.run([binary, "--help"]).stdout
    options = extract_options(help_text)
    N.check(len(options) >= 20, "xdpcap --help lists its options", options)

    with tempfile.TemporaryDirectory(prefix="xdpcapt-") as tmp, N.NetLab() as lab:
        N.expect(complete(lab, bash_file, ["xdpcap", "-i", ""]) == ["cap0", "lo"],
                 "bash: 'xdpcap -i <TAB>' offers the namespace's interfaces, cap0 and lo",
                 complete(lab, bash_file, ["xdpcap", "-i", ""]))
        N.expect(complete(lab, bash_file, ["xdpcap", "-w", "x", "--interface", "ca"]) == ["cap0"],
                 "bash: 'xdpcap -w x --interface ca<TAB>' offers cap0")
        # -i repeats; an interface already named is not offered again.
        for words in (["-i", "cap0", "-i", ""], ["--interface=cap0", "-i", ""],
                      ["-i", "cap0", "--interface", "=", ""]):
            got = complete(lab, bash_file, ["xdpcap"] + words)
            N.expect(got == ["lo"], f"bash: 'xdpcap {' '.join(words)}<TAB>' offers lo, not cap0 again", got)
        offered = complete(lab, bash_file, ["xdpcap", "-"])
        N.expect(offered == sorted(options),
                 "bash: 'xdpcap -<TAB>' offers exactly the options of --help",
                 f"missing {sorted(set(options) - set(offered))}, "
                 f"extra {sorted(set(offered) - set(options))}")
        for words, values in ((["-Q", ""], ["in", "inout", "out"]),
                              (["--direction", "=", ""], ["in", "inout", "out"]),
                              (["-Q", "in"], ["in", "inout"]),
                              (["--xdp-mode", ""], ["auto", "generic", "native"])):
            got = complete(lab, bash_file, ["xdpcap", "-i", "cap0"] + words)
            N.expect(got == values, f"bash: 'xdpcap -i cap0 {' '.join(words)}<TAB>' offers {values}",
                     got)
        for name in ("a.pcapng", "filter.txt"):
            open(os.path.join(tmp, name), "w").close()
        os.mkdir(os.path.join(tmp, "sub"))
        got = complete(lab, bash_file, ["xdpcap", "-w", ""], cwd=tmp)
        N.expect(got == ["-", "a.pcapng", "filter.txt", "sub"],
                 "bash: '-w <TAB>' offers the files, directories and -", got)
        got = complete(lab, bash_file, ["xdpcap", "-F", "f"], cwd=tmp)
        N.expect(got == ["filter.txt"], "bash: '-F f<TAB>' offers filter.txt", got)
        got = complete(lab, bash_file, ["xdpcap", "-c", ""], cwd=tmp)
        N.expect(got == [], "bash: a number (-c) gets no candidates", got)
        for number in ("-B", "--buffer-size", "--sample"):
            got = complete(lab, bash_file, ["xdpcap", number, ""], cwd=tmp)
            N.expect(got == [], f"bash: a number ({number}) gets no candidates", got)
        got = complete(lab, bash_file, ["xdpcap", "-z", "gz"])
        N.expect("gzip" in got and len(got) == len(set(got)),
                 "bash: '-z gz<TAB>' offers gzip, each command once", got)
        got = complete(lab, bash_file, ["xdpcap", "-Z", "nobod"])
        N.expect(got == ["nobody"], "bash: '-Z nobod<TAB>' offers the user nobody", got)

        # zsh, interactive in a pseudo-terminal, with the file first in fpath.
        zdir = os.path.join(tmp, "zsh")
        os.mkdir(zdir)
        shutil.copy(zsh_file, zdir)
        got = zcomplete(lab, zdir, "xdpcap -i ")
        N.expect(got == ["cap0", "lo"], "zsh: 'xdpcap -i <TAB>' offers cap0 and lo", got)
        for line in ("xdpcap -i cap0 -i ", "xdpcap --interface=cap0 -i ", "xdpcap -i lo -i "):
            got = zcomplete(lab, zdir, line)
            want = ["cap0"] if "lo" in line else ["lo"]
            N.expect(got == want, f"zsh: '{line}<TAB>' offers {want}: -i repeats, without the one named", got)
        got = zcomplete(lab, zdir, "xdpcap -")
        N.expect(got == sorted(options), "zsh: 'xdpcap -<TAB>' offers exactly the options of --help",
                 f"missing {sorted(set(options) - set(got))}, extra {sorted(set(got) - set(options))}")
        for line, values in (("xdpcap -Q ", ["in", "inout", "out"]),
                             ("xdpcap --direction=", ["in", "inout", "out"]),
                             ("xdpcap -i cap0 --xdp-mode ", ["auto", "generic", "native"])):
            got = zcomplete(lab, zdir, line)
            N.expect(got == values, f"zsh: '{line}<TAB>' offers {values}", got)
        got = zcomplete(lab, zdir, "xdpcap -F f", cwd=tmp)
        N.expect(got == ["filter.txt"], "zsh: '-F f<TAB>' offers filter.txt", got)
        got = zcomplete(lab, zdir, "xdpcap -w a", cwd=tmp)
        N.expect(got == ["a.pcapng"], "zsh: '-w a<TAB>' offers a.pcapng", got)
        got = zcomplete(lab, zdir, "xdpcap -Z nobod")
        N.expect(got == ["nobody"], "zsh: '-Z nobod<TAB>' offers the user nobody", got)


if __name__ == "__main__":
    N.main(test, tools=("ip", "bash", "zsh"))
