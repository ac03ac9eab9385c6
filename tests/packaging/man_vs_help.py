#!/usr/bin/env python3
"""man_vs_help.py - dthrottle-agent(8) against the program's --help, so the two cannot drift.

  man_vs_help.py AGENT MAN_MD [MAIN_CPP]

AGENT is the built program (build/agent), MAN_MD the man page's source
(man/dthrottle-agent.8.md). The subcommands are the ones the program's own usage lines
name ("agent stats ...", "agent hub ..."); for each, the flags its --help lists are
compared with the flags the man page documents for it:

  - the run command (no subcommand): the terms of the "# OPTIONS" section;
  - a subcommand: the terms of its "## NAME" section under "# COMMANDS"; `check`, which
    takes the run command's options, may document none and point to OPTIONS instead.

A documented flag is a definition-list term: a line starting with **-x**, or **\\--name**
(short and long name, then the value). Prints one "PASS name" or "FAIL name: what is
missing where" line per subcommand (and one for sections naming no subcommand), exits 1
on any failure. With MAIN_CPP (agent/main.cpp), every subcommand it dispatches
(strcmp(argv[1], "NAME")) must also be named by the usage lines of --help.
"""
import re
import subprocess
import sys

TERM = re.compile(r'^\*\*(?:-(\w)\*\*, \*\*)?\\?-?-([a-z0-9][a-z0-9-]*)\*\*')
HELP_ENTRY = re.compile(r'^  (?:-(\w), |    )--([a-z0-9][a-z0-9-]*)')


def run_help(agent, sub):
    argv = [agent] + ([sub] if sub else []) + ['--help']
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        raise SystemExit(f"FAIL man/help-runs: {' '.join(argv)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def help_flags(text):
    """{'--iface': 'i', '--json': None, ...} from a --help text."""
    flags = {}
    for line in text.split('\n'):
        m = HELP_ENTRY.match(line)
        if m:
            flags['--' + m.group(2)] = m.group(1)
    return flags


def subcommands(agent, run_text):
    """The subcommands the usage lines name: 'PROG WORD' where WORD is not an option."""
    prog = run_text.split('\n', 1)[0].split()[1]
    subs = []
    for line in run_text.split('\n'):
        if not line.strip():
            break
        words = line.replace('Usage:', '').split()
        if len(words) >= 2 and words[0] == prog and re.fullmatch(r'[a-z][a-z-]*', words[1]) and words[1] not in subs:
            subs.append(words[1])
    return subs


def dispatched(main_cpp):
    """The subcommands agent/main.cpp dispatches on: strcmp(argv[1], "NAME")."""
    text = open(main_cpp, encoding='utf-8').read()
    return [n for n in re.findall(r'strcmp\(argv\[1\], "([a-z][a-z-]*)"\)', text)]


def man_sections(md):
    """{'': flags of # OPTIONS, 'stats': flags of ## stats under # COMMANDS, ...}."""
    sections, current, in_commands = {}, None, False
    for line in md.split('\n'):
        if line.startswith('# '):
            title = line[2:].strip()
            in_commands = title == 'COMMANDS'
            current = '' if title == 'OPTIONS' else None
            if current is not None:
                sections.setdefault(current, {})
            continue
        if line.startswith('## ') and in_commands:
            current = line[3:].strip().split()[-1].strip('`*')
            sections.setdefault(current, {})
            continue
        m = TERM.match(line)
        if m and current is not None:
            sections[current]['--' + m.group(2)] = m.group(1)
    return sections


def compare(name, where_help, where_man, in_help, in_man):
    problems = []
    for flag in sorted(in_help.keys() - in_man.keys()):
        problems.append(f"{flag} is in '{where_help}' but not in {where_man}")
    for flag in sorted(in_man.keys() - in_help.keys()):
        problems.append(f"{flag} is in {where_man} but not in '{where_help}'")
    for flag in sorted(in_help.keys() & in_man.keys()):
        if in_help[flag] != in_man[flag]:
            short_help = f"-{in_help[flag]}" if in_help[flag] else "no short name"
            short_man = f"-{in_man[flag]}" if in_man[flag] else "no short name"
            problems.append(f"{flag}: '{where_help}' gives {short_help}, {where_man} gives {short_man}")
    return problems


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__)
    agent, man_path = sys.argv[1], sys.argv[2]
    md = open(man_path, encoding='utf-8').read()
    sections = man_sections(md)
    run_text = run_help(agent, '')
    subs = subcommands(agent, run_text)
    failures = 0
    if len(sys.argv) == 4:
        unnamed = [d for d in dispatched(sys.argv[3]) if d not in subs]
        if unnamed:
            print(f"FAIL man/usage-lines: {sys.argv[3]} dispatches {', '.join(unnamed)} but the usage lines of "
                  f"'dthrottle-agent --help' do not name them (add a '%prog NAME ...' line to kRunUsage)")
            failures += 1
            subs += unnamed
        else:
            print("PASS man/usage-lines")
    for sub in [''] + subs:
        label = sub or 'run'
        where_help = f"dthrottle-agent {sub} --help".replace('  ', ' ')
        flags = help_flags(run_help(agent, sub))
        if sub not in sections:
            print(f"FAIL man/{label}: {man_path} has no section '## {sub}' under '# COMMANDS' for the "
                  f"subcommand '{sub}' (its --help lists {', '.join(sorted(flags))})")
            failures += 1
            continue
        documented = sections[sub]
        where_man = f"{man_path} (# OPTIONS)" if not sub else f"{man_path} (## {sub})"
        if sub == 'check' and not documented:
            documented, where_man = sections.get('', {}), f"{man_path} (# OPTIONS, which ## check points to)"
        problems = compare(label, where_help, where_man, flags, documented)
        if problems:
            print(f"FAIL man/{label}: " + '; '.join(problems))
            failures += 1
        else:
            print(f"PASS man/{label}")
    for extra in sorted(set(sections) - set([''] + subs)):
        print(f"FAIL man/stale-{extra}: {man_path} documents a subcommand '{extra}' that "
              f"'dthrottle-agent --help' does not name")
        failures += 1
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
