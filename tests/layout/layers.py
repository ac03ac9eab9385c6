#!/usr/bin/env python3
"""layers.py - the agent's folders and the include edges between them.

  layers.py check [ROOT]    exit 1 naming every folder-level include cycle, and any
                            include that is not folder-qualified or reaches outside agent/
  layers.py order [ROOT]    the folders from the bottom layer up (one per line)
  layers.py tree  [ROOT]    the layout section of docs/internals.md: each source file with the
                            first sentence of its header comment
  layers.py readme [ROOT]   rewrites that section of ROOT/docs/internals.md in place

ROOT defaults to the repository (the folder above tests/). Folder X "uses" folder Y when a
file in agent/X includes "Y/...". Reading only #include lines keeps it free of a compiler.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Headers from outside agent/ that agent code may include: the shared BPF/C++ headers
# under include/ (dthrottle/*.h, dthrottle/abi/*.h, dthrottle/client/*.hpp) and the
# skeleton generated into build/.
EXTERNAL = re.compile(r'^(dthrottle/([a-z_]+/)?[a-z_]+\.(h|hpp)|[a-z_]+\.skel\.h)$')


def sources(agent):
    for folder in sorted(os.listdir(agent)):
        path = os.path.join(agent, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if name.endswith(('.h', '.cpp')):
                yield folder, name, os.path.join(path, name)


def graph(agent):
    """Returns ({folder: {used folder: example 'file -> include'}}, [problems])."""
    edges, problems = {}, []
    for folder, name, path in sources(agent):
        edges.setdefault(folder, {})
        with open(path, encoding='utf-8') as f:
            for inc in INCLUDE.findall(f.read()):
                where = f'agent/{folder}/{name}'
                if EXTERNAL.match(inc):
                    continue
                if '/' not in inc:
                    problems.append(f'{where} includes "{inc}": agent includes name their folder ("common/log.h")')
                    continue
                used = inc.split('/')[0]
                if not os.path.isfile(os.path.join(agent, inc)):
                    problems.append(f'{where} includes "{inc}", which is not a file under agent/')
                elif used != folder:
                    edges[folder].setdefault(used, f'{where} -> {inc}')
    for name in os.listdir(agent):
        if os.path.isfile(os.path.join(agent, name)) and name != 'main.cpp':
            problems.append(f'agent/{name}: only main.cpp lives at the root of agent/; put it in a folder')
    return edges, problems


def cycles(edges):
    """Every elementary cycle found by depth-first search, each as a list of folders."""
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 'open'
        stack.append(n)
        for m in sorted(edges.get(n, {})):
            if state.get(m) == 'open':
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 'done'

    for n in sorted(edges):
        if n not in state:
            visit(n)
    return found


def order(edges):
    """Folders bottom-up: each after every folder it uses (ties by name)."""
    done, out = set(), []
    while len(out) < len(edges):
        ready = sorted(n for n in edges if n not in done and all(m in done for m in edges[n]))
        if not ready:
            raise SystemExit('layers: the folders include each other in a cycle (run: layers.py check)')
        # One layer at a time, so the order reads bottom-up.
        for n in ready:
            done.add(n)
            out.append(n)
    return out


def first_sentence(path):
    """The first sentence of the file's opening comment ("// name - what it holds. ...")."""
    words = []
    with open(path, encoding='utf-8') as f:
        for i, line in enumerate(f):
            line = line.strip()
            if not line.startswith('//'):
                break
            text = line[2:].strip()
            if i == 0:
                text = re.sub(r'^\S+\s+-\s+', '', text)
            words.append(text)
            if re.search(r'[.:;]$', text):
                break
    sentence = ' '.join(words).strip()
    return re.split(r'(?<=\.)\s', sentence)[0].rstrip('.:;')


def describe(folder_path, base, name):
    header = os.path.join(folder_path, base + '.h')
    return first_sentence(header if os.path.isfile(header) else os.path.join(folder_path, name))


def wrap(left, text, width=100):
    lines, line = [], left.ljust(30)
    for word in text.split():
        if len(line) + 1 + len(word) > width and line.strip() != left.strip():
            lines.append(line.rstrip())
            line = ' ' * 30
        line += word + ' '
    lines.append(line.rstrip())
    return lines


def tree(agent, edges):
    lines = ['agent/'] + wrap('  main.cpp', first_sentence(os.path.join(agent, 'main.cpp')))
    for folder in order(edges):
        uses = ', '.join(sorted(edges[folder])) or 'nothing else'
        lines.append(f'  {folder}/'.ljust(30) + f'(uses {uses})')
        seen = set()
        for f, name, path in sources(agent):
            base = name.rsplit('.', 1)[0]
            if f != folder or base in seen:
                continue
            seen.add(base)
            both = all(os.path.isfile(os.path.join(agent, f, base + e)) for e in ('.h', '.cpp'))
            lines += wrap(f'    {base}' + ('.{h,cpp}' if both else name[len(base):]),
                          describe(os.path.join(agent, f), base, name))
    return '\n'.join(lines)


def main(argv):
    if len(argv) < 2 or argv[1] not in ('check', 'order', 'tree', 'readme'):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    agent = os.path.join(root, 'agent')
    edges, problems = graph(agent)
    if argv[1] == 'check':
        for c in cycles(edges):
            chain = ' -> '.join(c)
            hops = [edges[a][b] for a, b in zip(c, c[1:])]
            problems.append(f'include cycle between folders: {chain} (' + '; '.join(hops) + ')')
        for p in problems:
            print(p)
        return 1 if problems else 0
    if argv[1] == 'readme':
        return rewrite_readme(os.path.join(root, 'docs', 'internals.md'), tree(agent, edges))
    print('\n'.join(order(edges)) if argv[1] == 'order' else tree(agent, edges))
    return 0


def rewrite_readme(path, text):
    with open(path, encoding='utf-8') as f:
        readme = f.read()
    block = re.compile(r'(<!-- layout:begin[^\n]*\n```\n).*?(\n```\n<!-- layout:end)', re.S)
    if not block.search(readme):
        print(f'{path}: no layout block (<!-- layout:begin ... ``` ... ``` <!-- layout:end -->)', file=sys.stderr)
        return 1
    with open(path, 'w', encoding='utf-8') as f:
        f.write(block.sub(lambda m: m.group(1) + text + m.group(2), readme, count=1))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
