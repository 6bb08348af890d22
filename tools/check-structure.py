#!/usr/bin/python3
"""check-structure.py [SOURCE_ROOT]: the code's size limits and dead public functions.

Fails (exit 1, one line per finding, FILE:LINE first) when under src/:
  - a C function is over 60 lines: body lines between its `{` and `}` at
    column 0 (the one brace style the tree uses for functions);
  - a C file (.c or .h) is over 700 lines, other than src/model/kernels.c
    (the kernels and their naive twins stay side by side);
  - a public function (declared or defined at file level in a src/**/*.h) is
    named nowhere in src/, tests/ or bench/ but in its declarations, its
    definition and its own body: a dead public function.
Comments and string literals do not count as uses. Exit 0 prints one line."""
import os
import re
import sys

MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 700
FILE_LIMIT_EXEMPT = {"src/model/kernels.c"}
USE_DIRS = ("src", "tests", "bench")

IDENT = re.compile(r"[A-Za-z_]\w*")
CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "_Alignof",
            "_Static_assert", "static_assert", "_Generic", "alignof"}


def c_files(root, dirs, exts=(".c", ".h")):
    for d in dirs:
        for base, subdirs, names in os.walk(os.path.join(root, d)):
            subdirs.sort()
            for n in sorted(names):
                if n.endswith(exts):
                    yield os.path.relpath(os.path.join(base, n), root)


def strip(text):
    """TEXT with comments and the insides of string and character literals
    blanked (newlines kept), so offsets and line numbers stay the same."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            blank(i + 1, j)             # the quotes stay
            i = j + 1
        else:
            i += 1
    return "".join(out)


def blank_preprocessor(text):
    """TEXT with preprocessor lines (and their continuations) blanked."""
    lines, cont = text.split("\n"), False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[k] = " " * len(line)
    return "\n".join(lines)


def file_level(text):
    """The file-level declarations and definitions of stripped TEXT:
    (name, name offset, body span or None) for each function among them."""
    found, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == "{":
            if depth == 0:
                head = text[start:i]
                m = function_name(head)
                if m and not re.search(r"\b(struct|union|enum)\b[^()]*$|=\s*$", head):
                    close = matching(text, i)
                    found.append((m.group(1), start + m.start(1), (i, close)))
                    i, start = close + 1, close + 1
                    continue
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            head = text[start:i]
            m = function_name(head)
            if m and not re.match(r"\s*typedef\b", head):
                found.append((m.group(1), start + m.start(1), None))
            start = i + 1
        i += 1
    return found


def function_name(head):
    """The name a declaration HEAD declares, when it is a function's."""
    for m in CALLED.finditer(head):
        name = m.group(1)
        if name.startswith("__") or name in KEYWORDS:
            continue
        # a function pointer variable, `int (*name)(...)`, declares no function
        if re.search(r"\(\s*\*\s*$", head[:m.start(1)]):
            return None
        return m
    return None


def matching(text, i):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def long_functions(root, path, text):
    """Functions whose `{` and `}` sit at column 0 with more than the limit
    of lines between them."""
    lines, out = text.split("\n"), []
    code = strip(text).split("\n")
    k = 0
    while k < len(lines):
        if lines[k].rstrip() != "{":
            k += 1
            continue
        end = k + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        body = end - k - 1
        if body > MAX_FUNCTION_LINES:
            first = k - 1           # the signature's first line: back to a blank or a `}`/`;` line
            while first > 0 and code[first - 1].strip() and not code[first - 1].rstrip().endswith((";", "}")) \
                    and not code[first - 1].lstrip().startswith("#"):
                first -= 1
            m = function_name(" ".join(code[first:k]))
            name = m.group(1) if m else "?"
            out.append("%s:%d: function %s is %d lines (limit %d)" % (path, first + 1, name, body,
                                                                    MAX_FUNCTION_LINES))
        k = end + 1
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    texts = {}
    for path in c_files(root, USE_DIRS):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
            texts[path] = fh.read()
    findings = []
    src = [p for p in texts if p.startswith("src" + os.sep)]
    for path in src:
        text = texts[path]
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > MAX_FILE_LINES and path.replace(os.sep, "/") not in FILE_LIMIT_EXEMPT:
            findings.append("%s:1: file is %d lines (limit %d)" % (path, n, MAX_FILE_LINES))
        if path.endswith(".c"):
            findings += long_functions(root, path, text)
    findings += dead_public(texts, src)
    for f in findings:
        print(f)
    if findings:
        print("check-structure: %d findings" % len(findings))
        return 1
    print("check-structure: %d files under src/: functions within %d lines, files within %d, "
          "every public function used" % (len(src), MAX_FUNCTION_LINES, MAX_FILE_LINES))
    return 0


def dead_public(texts, src):
    """Public functions named nowhere but where they are declared and defined."""
    stripped, own = {}, {}         # own[path]: offsets of declaration names and bodies
    public = {}                    # name -> (header path, line)
    for path, text in texts.items():
        s = strip(text)
        stripped[path] = s
        spans = []
        for name, off, body in file_level(blank_preprocessor(s)):
            spans.append((name, off, off + len(name)))
            if body:
                spans.append((name, body[0], body[1] + 1))
            if path in src and path.endswith(".h") and name not in public:
                public[name] = (path, line_of(s, off))
        own[path] = spans
    used = set()
    # A name made by the preprocessor (`apply_##apply` in an X-macro table)
    # is used by the table: every public name with such a prefix counts.
    pasted = set()
    for s in stripped.values():
        pasted.update(re.findall(r"\b(\w+_)\s*##", s))
    used.update(n for n in public if any(n.startswith(p) for p in pasted))
    for path, s in stripped.items():
        for m in IDENT.finditer(s):
            name = m.group(0)
            if name not in public or name in used:
                continue
            if any(n == name and a <= m.start() < b for n, a, b in own[path]):
                continue
            used.add(name)
    return ["%s:%d: public function %s is used nowhere but its own declaration and definition"
            % (path, line, name) for name, (path, line) in sorted(public.items(), key=lambda kv: kv[1])
            if name not in used]


if __name__ == "__main__":
    sys.exit(main())
