#!/usr/bin/python3
"""Check the xdpcap man page against the program's --help text and groff.

Usage: check_man.py PATH_TO_XDPCAP PATH_TO_MAN_PAGE

1. Runs `xdpcap --help`, extracts every option (short -x and long --xxx) and
   checks that each one appears in the man page source (outside comments,
   with roff escapes such as \\- and font changes normalised away).
   Each option of --help (its short and long spellings, and another one its
   description gives as "(also -#)") is also named in the SYNOPSIS section
   (by one of its spellings, a short one maybe in a bundle such as
   [-AdDeh]) and in the OPTIONS section (by every spelling).
2. Renders the page with `groff -man -ww -z -Tutf8` (all warnings on) and
   fails on any stderr output or a non-zero status.
3. Renders the page with `man -l` (MANWIDTH=80) and fails if that fails.

Exits 0 when everything passes, 1 otherwise (2 on bad usage).
Standard library only.
"""

import os
import re
import subprocess
import sys

# Fewer options than this means the help text or the regex is broken:
# the contract has 11 options with 8 short spellings.
MIN_OPTIONS = 10

# Lines of the cxxopts option list: two spaces, then either "-x, --long" or,
# for long-only options, six spaces and "--long". Continuation lines of
# wrapped descriptions are indented much further and so never match.
OPTION_LINE = re.compile(
    r"^ {2,6}(?:-(?P<short>[A-Za-z0-9?]),\s+)?(?P<long>--[A-Za-z0-9][A-Za-z0-9-]*)"
    r"|^ {2,6}-(?P<only_short>[A-Za-z0-9?])(?=[\s,]|$)"
)
# Options in the usage synopsis: "-i", "--xdp-mode" and bundles like "[-hqUv]".
USAGE_TOKEN = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9-]*|-[A-Za-z0-9]+)(?![\w-])")


def extract_options(help_text):
    """Return the sorted set of option spellings found in help_text."""
    options = set()
    lines = help_text.splitlines()
    for line in lines:
        m = OPTION_LINE.match(line)
        if not m:
            continue
        if m.group("short"):
            options.add("-" + m.group("short"))
        if m.group("long"):
            options.add(m.group("long"))
        if m.group("only_short"):
            options.add("-" + m.group("only_short"))

    # The usage block: from the "Usage:" line up to the first blank line.
    in_usage = False
    for line in lines:
        if line.strip().lower().startswith("usage:"):
            in_usage = True
            line = line.split(":", 1)[1]
        elif in_usage and not line.strip():
            break
        if not in_usage:
            continue
        for tok in USAGE_TOKEN.findall(line):
            if tok.startswith("--"):
                options.add(tok)
            else:  # "-hqUv" is four short options
                options.update("-" + c for c in tok[1:])
    return sorted(options, key=lambda o: (o.lstrip("-").lower(), o))


# "-x, --long" or "--long" at the start of an option line, with "(also -#)"
# anywhere in its description.
ALSO = re.compile(r"\(also (-[^\s)]+)\)")
SYNOPSIS_TOKEN = re.compile(r"(?<![\w-])(--[A-Za-z0-9][A-Za-z0-9-]*|-[#A-Za-z0-9]+)(?![\w-])")


def extract_entries(help_text):
    """Each option line of --help as the list of its spellings."""
    entries = []
    for line in help_text.splitlines():
        m = OPTION_LINE.match(line)
        if not m:
            continue
        spellings = []
        if m.group("short"):
            spellings.append("-" + m.group("short"))
        if m.group("long"):
            spellings.append(m.group("long"))
        if m.group("only_short"):
            spellings.append("-" + m.group("only_short"))
        spellings += ALSO.findall(line)
        entries.append(spellings)
    return entries


def section(text, name):
    """The text of the man page section NAME (normalised source)."""
    m = re.search(r"^\.SH " + re.escape(name) + r"\s*$(.*?)(?=^\.SH |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def synopsis_spellings(synopsis):
    """Every option spelling in SYNOPSIS, bundles like -AdDeh split up."""
    found = set()
    for tok in SYNOPSIS_TOKEN.findall(synopsis):
        if tok.startswith("--") or len(tok) == 2:
            found.add(tok)
        else:
            found.update("-" + c for c in tok[1:])
    return found


def normalise_roff(source):
    """Roff source -> text in which option spellings can be searched for."""
    kept = []
    for line in source.splitlines():
        # Drop whole-line comments (.\" and '\") and trailing \" comments.
        if re.match(r"^[.']\s*\\\"", line) or line.startswith('.\\#'):
            continue
        line = re.sub(r'\\".*$', "", line)
        line = re.sub(r"\\#.*$", "", line)
        kept.append(line)
    text = "\n".join(kept)
    # Font and size changes: \fB \fI \fR \fP \f(BI \f[CB] \s-1 \s+2 \s0.
    text = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", text)
    text = re.sub(r"\\s[-+]?\d", "", text)
    # The roff hyphen/minus and other spellings of "-".
    for esc in ("\\-", "\\(hy", "\\[hy]", "\\(mi", "\\[mi]", "\\[-]"):
        text = text.replace(esc, "-")
    # Zero-width and non-printing escapes: \& \% \: \c \) \/ \,
    text = re.sub(r"\\[&%:c)/,]", "", text)
    return text


def option_in_page(option, text):
    pattern = r"(?<![\w-])" + re.escape(option) + r"(?![\w-])"
    return re.search(pattern, text) is not None


def run(cmd, env=None):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, timeout=60)
    except FileNotFoundError as e:
        return e
    except subprocess.TimeoutExpired as e:
        return e


def main(argv):
    if len(argv) != 3:
        print("usage: check_man.py PATH_TO_XDPCAP PATH_TO_MAN_PAGE", file=sys.stderr)
        return 2
    xdpcap, page = argv[1], argv[2]
    failures = []

    # 1. Options from --help.
    r = run([xdpcap, "--help"])
    if isinstance(r, Exception):
        print(f"FAIL: cannot run {xdpcap} --help: {r}")
        return 1
    help_text = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0:
        failures.append(f"{xdpcap} --help exited with status {r.returncode}")
    options = extract_options(help_text)
    print(f"options in --help ({len(options)}): {' '.join(options)}")
    if len(options) < MIN_OPTIONS:
        failures.append(f"only {len(options)} options found in --help "
                        f"(expected at least {MIN_OPTIONS}): help text or regex broken")

    try:
        with open(page, encoding="utf-8") as f:
            source = f.read()
    except OSError as e:
        print(f"FAIL: cannot read {page}: {e}")
        return 1
    text = normalise_roff(source)
    missing = [o for o in options if not option_in_page(o, text)]
    for o in missing:
        failures.append(f"option {o} from --help is missing from {page}")

    # 1b. Every option in SYNOPSIS (one spelling) and in OPTIONS (each).
    entries = extract_entries(help_text)
    in_synopsis = synopsis_spellings(section(text, "SYNOPSIS"))
    options_section = section(text, "OPTIONS")
    if len(entries) < MIN_OPTIONS or not in_synopsis or not options_section:
        failures.append(f"SYNOPSIS or OPTIONS not found in {page}, or too few options in --help")
    for spellings in entries:
        if spellings == ["--expression"]:
            continue  # the positional expression, shown as [expression]
        if not in_synopsis.intersection(spellings):
            failures.append(f"option {' / '.join(spellings)} from --help is missing from the SYNOPSIS of {page}")
        for o in spellings:
            if not option_in_page(o, options_section):
                failures.append(f"option {o} from --help is missing from the OPTIONS section of {page}")

    # 2. groff with all warnings.
    r = run(["groff", "-man", "-ww", "-z", "-Tutf8", page])
    if isinstance(r, Exception):
        failures.append(f"cannot run groff: {r}")
    else:
        err = r.stderr.decode("utf-8", "replace").strip()
        if r.returncode != 0:
            failures.append(f"groff exited with status {r.returncode}")
        if err:
            failures.append("groff warnings:\n" + "\n".join("    " + l for l in err.splitlines()))

    # 3. man -l, as a user would read it.
    env = dict(os.environ)
    env.pop("MAN_KEEP_FORMATTING", None)
    env["MANWIDTH"] = "80"
    env["MANPAGER"] = env["PAGER"] = "cat"
    r = run(["man", "-l", page], env=env)
    if isinstance(r, Exception):
        failures.append(f"cannot run man: {r}")
    else:
        out = r.stdout.decode("utf-8", "replace")
        err = r.stderr.decode("utf-8", "replace").strip()
        if r.returncode != 0:
            failures.append(f"man -l exited with status {r.returncode}"
                            + (":\n    " + err.replace("\n", "\n    ") if err else ""))
        elif "NAME" not in out or "xdpcap" not in out:
            failures.append("man -l produced no recognisable page")
        elif err:
            print("note: man -l printed on stderr:\n    " + err.replace("\n", "\n    "))

    if failures:
        for f in failures:
            print("FAIL: " + f)
        return 1
    print(f"OK: {page}: all {len(options)} options documented, groff -ww clean, man -l renders")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
