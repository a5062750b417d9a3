#!/usr/bin/env python3
"""Checks the rooms of src/: a folder includes only folders below it in LAYERS
(and itself), so data and dependencies flow one way and no cycle can form.
Prints each include that breaks the order; exits 1 if there is one."""
import pathlib
import re
import sys

# Top to bottom, as docs/ARCHITECTURE.md draws them.
LAYERS = ["app", "cli", "capture", "programs", "host", "filter", "input", "ring", "output", "text", "base"]

src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2] / "src")
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
rank = {name: i for i, name in enumerate(LAYERS)}
problems = []
for path in sorted(src.rglob("*.[ch]pp")):
    parts = path.relative_to(src).parts
    if len(parts) == 1:
        if path.name != "main.cpp":
            problems.append(f"{path.relative_to(src)}: lies loose at the top of src/")
        continue
    room = parts[0]
    if room not in rank:
        problems.append(f"{path.relative_to(src)}: room {room}/ is not in LAYERS")
        continue
    for target in include.findall(path.read_text()):
        other = target.split("/")[0] if "/" in target else None
        if other is None or other not in rank:
            continue  # the ABI header, skeletons, version.hpp
        if rank[other] < rank[room]:
            problems.append(f"{path.relative_to(src)}: {room}/ includes {target}, a room above it")
for line in problems:
    print(line)
print(f"{len(problems)} include(s) against the order {' > '.join(LAYERS)}")
sys.exit(1 if problems else 0)
