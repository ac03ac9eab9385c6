#!/usr/bin/env python3
"""function_lengths.py - the longest C++ function definitions in agent/ and tools/.

  function_lengths.py [ROOT] [--top N]     the N longest (default 15), longest first,
                                           one per line: file:line name lines
  function_lengths.py [ROOT] --max N       exit 1 listing every function over N lines

ROOT defaults to the repository (the folder above tests/). A function's length counts the
lines from its signature to its closing brace. Finding definitions needs no compiler: after
comments, strings and preprocessor lines are blanked, a `{` at namespace or class scope whose
signature has a parameter list (and no `=` before it) opens a function body, and everything
up to the matching `}` (lambdas and local classes included) belongs to that function.
Namespace, class, struct, union and enum bodies are scopes, not functions; other braces at
that level (initializers such as `kTable = {...}`) are skipped whole.
"""
import os
import re
import sys

SCOPE = re.compile(r'^(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b|^extern\s*""$', re.S)
IDENT = r'~?[A-Za-z_]\w*'
OPERATOR = r'operator\s*(?:\(\s*\)|[^\s(]+)'  # operator(), operator==, operator<<, ...
NAME = re.compile(rf'((?:{IDENT}\s*::\s*)*(?:{OPERATOR}|{IDENT}))\s*$')


def blank_code(text):
    """The text with comments, string/char literals' contents and preprocessor lines replaced
    by spaces; newlines stay, so offsets and line numbers still match the file."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == '#' or (line_start and c in ' \t' and text[i:].lstrip(' \t').startswith('#')):
            # A preprocessor directive, with its backslash continuations.
            while i < n and text[i] != '\n':
                if text[i] == '\\' and i + 1 < n and text[i + 1] == '\n':
                    out.append(' \n')
                    i += 2
                    continue
                out.append(' ')
                i += 1
            continue
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
            continue
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
            continue
        raw = re.match(r'R"([^()\\\s]{0,16})\(', text[i:i + 20])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            end = text.find(')' + raw.group(1) + '"', i)
            j = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('""' + re.sub(r'[^\n]', ' ', text[i + 2:j]))
            i = j
            continue
        if c in '"\'':
            if c == "'" and i > 0 and text[i - 1].isalnum():
                out.append(' ')  # digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (min(j, n) - i - 1) + (c if j < n else ''))
            i = j + 1
            continue
        out.append(c)
        line_start = c == '\n' or (line_start and c in ' \t')
        i += 1
    return ''.join(out)


def function_name(header):
    """The (qualified) name of the function a signature declares, or None when the header is
    not a function signature (no parameter list, or an `=` before it)."""
    depth_angle = 0
    for m in re.finditer(rf'{OPERATOR}|[<>()=]', header):
        tok = m.group(0)
        if tok.startswith('operator'):
            continue  # its symbols are a name, not brackets or an initializer
        if tok == '<':
            depth_angle += 1
        elif tok == '>':
            if header[m.start() - 1:m.start()] != '-':
                depth_angle = max(0, depth_angle - 1)
        elif tok == '=' and depth_angle == 0:
            return None
        elif tok == '(' and depth_angle == 0:
            name = NAME.search(header[:m.start()])
            if not name:
                return None
            return re.sub(r'\s+', '', name.group(1))
    return None


def functions(path):
    """Yields (line, name, lines) for each function defined in the file."""
    with open(path, encoding='utf-8') as f:
        code = blank_code(f.read())
    line_of = [0] * (len(code) + 1)
    line = 1
    for i, c in enumerate(code):
        line_of[i] = line
        if c == '\n':
            line += 1
    line_of[len(code)] = line

    i, n = 0, len(code)
    header_start = 0      # where the current declaration at scope level began
    while i < n:
        c = code[i]
        if c in ';}':
            header_start = i + 1
        elif c == ':' and code[i - 1:i + 2].count(':') == 1 and re.search(
                r'\b(public|private|protected)\s*$', code[header_start:i]):
            header_start = i + 1  # an access label ends nothing but starts the next declaration
        elif c == '{':
            header = code[header_start:i].strip()
            if SCOPE.match(header):
                header_start = i + 1  # descend into the scope: its declarations are ours too
            else:
                name = function_name(header)
                close = matching_brace(code, i)
                if name and member_init_brace(header, code, i):
                    i = close + 1    # `a_{x}` in a constructor's initializer list
                    continue
                if name:
                    start = header_start + (len(code[header_start:i]) - len(code[header_start:i].lstrip()))
                    first = line_of[start]
                    yield first, name, line_of[close] - first + 1
                header_start = close + 1
                i = close + 1
                continue
        i += 1


def member_init_brace(header, code, i):
    """True when the `{` at i initializes a member in a constructor's initializer list
    (`Foo::Foo(int x) : a_{x}, b_(x) {`): the signature has a `) :` and the brace follows a name."""
    if not re.search(r'\)\s*(noexcept\s*)?:(?!:)', header):
        return False
    prev = code[:i].rstrip()
    return bool(prev) and (prev[-1].isalnum() or prev[-1] in '_>')


def matching_brace(code, i):
    depth = 0
    for j in range(i, len(code)):
        if code[j] == '{':
            depth += 1
        elif code[j] == '}':
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


SCANNED = ('agent', 'tools')  # the folders under ROOT whose C++ is measured


def all_functions(root):
    found = []
    for top in SCANNED:
        for folder, _, files in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(files):
                if name.endswith(('.h', '.cpp')):
                    path = os.path.join(folder, name)
                    rel = os.path.relpath(path, root)
                    found += [(lines, rel, line, fn) for line, fn, lines in functions(path)]
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    return found


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    top, limit, args = 15, None, list(argv)
    try:
        while args:
            arg = args.pop(0)
            if arg == '--top':
                top = int(args.pop(0))
            elif arg == '--max':
                limit = int(args.pop(0))
            elif arg.startswith('-'):
                raise ValueError(arg)
            else:
                root = arg
    except (ValueError, IndexError):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    found = all_functions(root)
    if limit is None:
        for lines, rel, line, name in found[:top]:
            print(f'{rel}:{line} {name} {lines}')
        return 0
    over = [f for f in found if f[0] > limit]
    for lines, rel, line, name in over:
        print(f'{rel}:{line} {name} {lines} lines (max {limit})')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
