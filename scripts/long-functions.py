#!/usr/bin/env python3
"""Lists the production C++ functions whose body is longer than LIMIT lines (default 100),
longest first: "LINES FILE:LINE NAME". Usage: scripts/long-functions.py [LIMIT [DIR...]]
(default dirs: agent api cli common scheduler tools workers; tests, bench and *_test files
are skipped). Exit status 1 when one is found.

It counts braces rather than parsing C++: comments, strings and raw strings are blanked
first, and a '{' after a closing ')' (with const, noexcept, override or an annotation
macro between) outside any function opens a function; lambdas count toward the function
that holds them. Body lines are those between the braces' lines."""
import os
import re
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # The repository root.
LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 100
ROOTS = sys.argv[2:] or ["agent", "api", "cli", "common", "scheduler", "tools", "workers"]

def strip(src):
    out = []; i = 0; n = len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i); j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2); j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j])); i = j
        elif src.startswith('R"', i) and (i == 0 or not (src[i-1].isalnum() or src[i-1] == '_')):
            m = re.match(r'R"([^(]*)\(', src[i:])
            end = src.find(")" + m.group(1) + '"', i)
            j = end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", src[i+2:j])); i = j
        elif c == '"' or (c == "'" and not (i > 0 and src[i-1].isalnum())):
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)

CTRL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*$")
def functions(path):
    src = strip(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # entries: (kind, line, name)
    last = 0  # index after last ; { }
    line = 1
    res = []
    for i, c in enumerate(src):
        if c == "\n": line += 1
        if c == "{":
            head = src[last:i]
            in_fn = any(k == "fn" for k, _, _ in stack)
            kind = "blk"
            if not in_fn:
                h = " ".join(head.split())
                h2 = re.sub(r"\b(const|noexcept|override|final|mutable|try)\b|\b[A-Z_]+\([^()]*\)|->\s*[\w:<>,\s\*&]+$", "", h).strip()
                if ")" in h and h2.endswith(")") and not re.match(r"^(namespace|class|struct|enum|union)\b", h) and "=" not in h.split("(")[0]:
                    m = re.search(r"([~\w:]+(?:operator\s*\S+)?)\s*\(", h)
                    kind = "fn"; name = m.group(1) if m else h[:40]
                    # constructor init list: name is before ':' list
                    m2 = re.search(r"([~\w:]+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:noexcept\s*)?:", h)
                    if m2: name = m2.group(1)
                    stack.append(("fn", line, name)); last = i + 1; continue
            stack.append((kind, line, None)); last = i + 1
        elif c == "}":
            if stack:
                k, l0, name = stack.pop()
                if k == "fn":
                    res.append((line - l0 - 1, l0, name))
            last = i + 1
        elif c == ";":
            last = i + 1
    return res

found = []
for root in ROOTS:
    for d, _, fs in os.walk(root):
        if re.search(r"(^|/)(tests?|bench|third_party)(/|$)", d): continue
        for f in fs:
            if not f.endswith((".cpp", ".hpp", ".h", ".cc")) or "_test" in f or f.startswith("test_"): continue
            p = os.path.join(d, f)
            found += [(n, f"{p}:{l0}", name) for n, l0, name in functions(p) if n > LIMIT]
for n, where, name in sorted(found, key=lambda x: -x[0]):
    print(f"{n:5d} {where} {name}")
sys.exit(1 if found else 0)
