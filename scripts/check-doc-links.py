#!/usr/bin/env python3
"""Checks the links between the repository's Markdown files: each [text](path#anchor)
target exists inside the repository, and each anchor matches a heading of the target
(GitHub's slug rules: lower case, punctuation dropped, spaces to '-', '-1' for a repeat).
Links to URLs (http:, mailto:) are not checked, nor text in code spans or fences.
Usage: scripts/check-doc-links.py [ROOT [ALLOWED_MISSING_FILE...]]; exit 1 on a bad link."""
import os, re, subprocess, sys
root = sys.argv[1] if len(sys.argv) > 1 else '.'
allow = set(sys.argv[2:])
files = subprocess.run(['git', '-C', root, 'ls-files', '*.md'], capture_output=True, text=True).stdout.split()
files = [f for f in files if 'node_modules' not in f]
def slug(h):
    h = h.strip().lower()
    h = re.sub(r'[^\w\- ]', '', h)   # drop punctuation (keeps letters, digits, _, -, space)
    return h.replace(' ', '-')
def anchors(path):
    out = {}; seen = {}; fence = False
    for line in open(path, encoding='utf-8'):
        if line.lstrip().startswith('```'): fence = not fence; continue
        if fence: continue
        m = re.match(r'^(#{1,6})\s+(.*?)\s*#*\s*$', line)
        if not m: continue
        text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', m.group(2))  # link text only
        s = slug(text)
        n = seen.get(s, 0); seen[s] = n + 1
        out[s if n == 0 else f'{s}-{n}'] = True
    return out
bad = 0; count = 0
link_re = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')
for f in files:
    fence = False
    for no, line in enumerate(open(os.path.join(root, f), encoding='utf-8'), 1):
        if line.lstrip().startswith('```'): fence = not fence; continue
        if fence: continue
        for m in link_re.finditer(re.sub(r'`[^`]*`', '', line)):
            t = m.group(1)
            if re.match(r'^[a-z]+:', t): continue
            count += 1
            path, _, anchor = t.partition('#')
            target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.realpath(os.path.join(root, target)).startswith(os.path.realpath(root)):
                print(f'{f}:{no}: {t}: outside the repository'); bad += 1; continue
            full = os.path.join(root, target)
            if not os.path.exists(full):
                if target in allow: continue
                print(f'{f}:{no}: {t}: no such file'); bad += 1; continue
            if anchor:
                if os.path.isdir(full) or not full.endswith('.md'):
                    print(f'{f}:{no}: {t}: anchor into a non-Markdown target'); bad += 1; continue
                if anchor not in anchors(full):
                    print(f'{f}:{no}: {t}: no heading #{anchor}'); bad += 1
print(f'{count} links checked, {bad} bad')
sys.exit(1 if bad else 0)
