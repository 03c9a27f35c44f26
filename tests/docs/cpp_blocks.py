#!/usr/bin/env python3
"""Writes each ```cpp block of a Markdown file to <outdir>/readme_block_<N>.cpp.

Usage: cpp_blocks.py <file.md> <outdir>. Prints the files' paths separated by
';' (a CMake list). Exit status 1 when the file has no C++ block (a README
whose snippet went missing or whose fence changed must not pass silently).
"""
import pathlib
import re
import sys

md = pathlib.Path(sys.argv[1]).read_text()
out = pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
blocks = re.findall(r"^```cpp\n(.*?)^```", md, re.S | re.M)
if not blocks:
    sys.exit(f"{sys.argv[1]}: no ```cpp block")
paths = []
for i, code in enumerate(blocks, 1):
    p = out / f"readme_block_{i}.cpp"
    if not p.exists() or p.read_text() != code:  # unchanged: no rebuild
        p.write_text(code)
    paths.append(p.as_posix())
print(";".join(paths), end="")
