#!/usr/bin/env python3
"""Counts the functions longer than 40 and 60 lines, per language, and lists those over 60.

    scripts/function_lengths.py [--list N] [ROOT]

C++ (src/, include/, python/src/) and TypeScript (js/src/) are scanned for brace-delimited
function bodies: comments and literals are blanked, then every `{` met at namespace or class scope
is judged by the declaration before it (a parameter list and no `=`: a function; `=>`: an arrow
function). Python (python/onnxzip/) is read with `ast`. Only outermost functions count: a lambda
or a nested function is part of the function around it, a method is a function of its own. A
function's length runs from the first line of its declaration (Python: the `def` line) to its
closing line, both included. A scanner, not a compiler: a construct it misjudges is skipped, not
miscounted, in the code this project writes (tests/python/ and the C++ tests are not scanned).
"""

import argparse
import ast
import pathlib
import re
import sys
from dataclasses import dataclass

THRESHOLDS = (40, 60)


@dataclass(frozen=True)
class Function:
    language: str
    path: str
    line: int
    name: str
    lines: int


def blank_range(out: list, a: int, b: int) -> None:
    """Spaces over out[a:b], newlines kept (offsets and line numbers stay the file's)."""
    for k in range(a, min(b, len(out))):
        if out[k] != "\n":
            out[k] = " "


def comment_end(text: str, i: int):
    """The end of the // or /* */ comment starting at `i`, or None when none starts there."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return len(text) if j < 0 else j + 2
    return None


def blank_cpp(text: str) -> str:
    """`text` with comments, string and character literals and preprocessor lines replaced by
    spaces (newlines kept, so offsets and line numbers stay those of the file)."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True

    def blank(a: int, b: int) -> None:
        blank_range(out, a, b)

    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            blank(i, j)
            i = j
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if (j := comment_end(text, i)) is not None:
            blank(i, j)
            i = j
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            j = text.find(")" + delimiter + '"', open_paren)
            j = n if j < 0 else j + len(delimiter) + 2
            blank(i + 2, j - 1)
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # A digit separator: 1'000.
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def blank_ts(text: str) -> str:
    """As blank_cpp for TypeScript: comments, strings, regular expressions and the text of
    template literals blanked (their `${...}` expressions kept, being code)."""
    out = list(text)
    n = len(text)

    def blank(a: int, b: int) -> None:
        blank_range(out, a, b)

    def previous_significant(i: int) -> str:
        j = i - 1
        while j >= 0 and out[j].isspace():
            j -= 1
        if j < 0:
            return ""
        if out[j].isalnum() or out[j] in "_$":
            k = j
            while k >= 0 and (out[k].isalnum() or out[k] in "_$"):
                k -= 1
            return text[k + 1:j + 1]
        return out[j]

    template_depth = []  # For each open `${`, the brace depth at which it closes.
    depth = 0
    i = 0
    while i < n:
        c = text[i]
        if (j := comment_end(text, i)) is not None:
            blank(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "`" or (c == "}" and template_depth and template_depth[-1] == depth):
            if c == "}":
                template_depth.pop()
            j = i + 1
            while j < n and text[j] != "`" and not text.startswith("${", j):
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            if text.startswith("${", j):
                template_depth.append(depth)
                i = j + 2
            else:
                i = j + 1
        elif c == "/" and (previous_significant(i) in ("", "return", "typeof", "case", "of", "in")
                           or previous_significant(i) in tuple("(,=:[!&|?{};+-*%<>~^")):
            j = i + 1
            in_class = False
            while j < n and text[j] != "\n" and (in_class or text[j] != "/"):
                if text[j] == "\\":
                    j += 1
                elif text[j] == "[":
                    in_class = True
                elif text[j] == "]":
                    in_class = False
                j += 1
            blank(i + 1, j)
            i = j + 1
        else:
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            i += 1
    return "".join(out)


def strip_groups(text: str, opening: str, closing: str) -> str:
    """`text` without its (nested) groups opening..closing, which become one space."""
    out, depth = [], 0
    for c in text:
        if c == opening:
            depth += 1
            if depth == 1:
                out.append(" ")
        elif c == closing and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


CPP_SCOPE = re.compile(r"^(?:(?:export|inline)\s+)*(?:namespace|class|struct|union)\b|^extern\s+\"")
CPP_NAME = re.compile(r"((?:[A-Za-z_]\w*\s*::\s*)*~?[A-Za-z_]\w*|operator\s*\S+?)\s*(?:<[^()]*>)?\s*$")


def cpp_kind(header: str) -> str:
    """'scope', 'function' or 'other' for the `{` that ends `header` (a declaration at namespace
    or class scope, inner brace groups already replaced by `{}`)."""
    h = " ".join(header.split())
    h = re.sub(r"^\[\[[^\]]*\]\]\s*", "", h)
    while h.startswith("template"):
        rest = h[len("template"):].lstrip()
        if not rest.startswith("<"):
            break
        depth = 0
        for k, ch in enumerate(rest):
            depth += ch == "<"
            depth -= ch == ">"
            if depth == 0:
                h = rest[k + 1:].lstrip()
                break
        else:
            return "other"
    if CPP_SCOPE.search(h):
        return "scope"
    if re.match(r"^(enum)\b", h) or "(" not in h:
        return "other"
    h = re.sub(r"\b(?:public|private|protected)\s*:(?!:)", "", h)
    flat = strip_groups(re.sub(r"operator\s*(\(\)|[^\s(]+)", "operator", h), "(", ")")
    if "=" in flat.replace("==", ""):
        return "other"
    # After a constructor's initializer list, a brace that follows a member's name initializes
    # it; the body's follows `)` or `}`.
    if re.search(r"(?<!:):(?!:)", flat) and re.search(r"[\w>]\s*$", h):
        return "other"
    return "function"


def cpp_name(header: str) -> str:
    h = " ".join(header.split())
    first_paren = strip_groups(h, "<", ">").find("(")
    flat = strip_groups(h, "<", ">")
    m = CPP_NAME.search(flat[:first_paren]) if first_paren >= 0 else None
    return m.group(1).replace(" ", "") if m else h[:40]


TS_CONTROL = {"if", "for", "while", "switch", "catch", "with", "return", "else", "do", "try", "finally"}


def ts_kind(header: str) -> str:
    h = " ".join(header.split())
    if re.search(r"=>\s*$", h):
        return "function"
    if re.search(r"(?:^|\s)(class|namespace|module)\s", h) and "(" not in strip_groups(h, "<", ">").split("{")[0] \
            and not re.search(r"=\s*class", h):
        return "scope"
    if not h or h[-1] in ":<|&,(=[":
        return "other"  # A type literal, a destructured parameter, an object literal.
    if re.search(r"(?:^|\s)(interface|type|enum)\s", h):
        return "other"
    if re.search(r"\bfunction\b", h):
        return "function"
    flat = strip_groups(strip_groups(h, "(", ")"), "<", ">")
    if "(" in h and "=" not in flat:
        word = re.match(r"^[\w\s$]*?(\w+)\s*$", flat.split("(")[0].split(":")[0] if "(" in flat else flat.split(":")[0])
        first = h.split("(")[0].split()
        if first and first[-1] in TS_CONTROL:
            return "other"
        return "function" if word is not None or h.lstrip().startswith(("async", "get", "set", "static", "public", "private", "protected")) else "other"
    return "other"


def ts_name(header: str) -> str:
    h = " ".join(header.split())
    m = re.search(r"\bfunction\b\s*\*?\s*([\w$]+)", h)
    if m:
        return m.group(1)
    m = re.search(r"(?:const|let|var)\s+([\w$]+)", h)
    if m:
        return m.group(1)
    m = re.search(r"([\w$]+)\s*(?:<[^(]*>)?\s*\(", h)
    return m.group(1) if m else h[:40]


def scan_braces(path: pathlib.Path, text: str, language: str, kind, name) -> list:
    """Outermost functions of `text` (already blanked): scopes are entered, functions measured,
    anything else at scope level skipped as part of the declaration it belongs to."""
    functions = []
    stack = ["scope"]  # What each open brace is: scope, function, other.
    header_start = 0    # Offset where the declaration now being read at scope level began.
    function_start = 0
    line_of = [0]
    for k, c in enumerate(text):
        if c == "\n":
            line_of.append(k + 1)

    def line(offset: int) -> int:
        lo, hi = 0, len(line_of) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_of[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    for k, c in enumerate(text):
        top = stack[-1]
        if c == "{":
            if top == "scope":
                header = re.sub(r"\{[^{}]*\}", "{}", text[header_start:k])
                judged = kind(header)
                if judged == "function":
                    function_start = header_start
                    function_name = name(header)
                stack.append(judged)
                if judged == "scope":
                    header_start = k + 1
            else:
                stack.append("other" if top == "other" else "inner")
        elif c == "}":
            if len(stack) == 1:
                continue  # Unbalanced: ignore.
            closed = stack.pop()
            if closed == "function":
                start = function_start + len(text[function_start:]) - len(text[function_start:].lstrip())
                first, last = line(start), line(k)
                functions.append(Function(language, str(path), first, function_name, last - first + 1))
                header_start = k + 1
            elif closed == "scope":
                header_start = k + 1
        elif c == ";" and top == "scope":
            header_start = k + 1
    return functions


def python_functions(path: pathlib.Path, text: str) -> list:
    functions = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append(Function("Python", str(path), child.lineno, child.name,
                                          child.end_lineno - child.lineno + 1))
            elif isinstance(child, ast.ClassDef):
                visit(child)
            elif not isinstance(child, ast.Lambda):
                visit(child)

    visit(ast.parse(text, str(path)))
    return functions


def collect(root: pathlib.Path) -> list:
    functions = []
    for folder in ("src", "include", "python/src"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".cpp", ".h", ".hpp", ".cc"):
                text = blank_cpp(path.read_text(encoding="utf-8"))
                functions += scan_braces(path.relative_to(root), text, "C++", cpp_kind, cpp_name)
    for path in sorted((root / "python/onnxzip").rglob("*.py")):
        functions += python_functions(path.relative_to(root), path.read_text(encoding="utf-8"))
    for path in sorted((root / "js/src").rglob("*.ts")):
        if path.name.endswith(".d.ts"):
            continue
        text = blank_ts(path.read_text(encoding="utf-8"))
        functions += scan_braces(path.relative_to(root), text, "TypeScript", ts_kind, ts_name)
    return functions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent,
                        type=pathlib.Path, help="the repository (default: this one)")
    parser.add_argument("--list", type=int, default=THRESHOLDS[-1], metavar="N",
                        help="list the functions over N lines (default %(default)s)")
    args = parser.parse_args()
    functions = collect(args.root)
    print(f"{'language':<11} {'functions':>9} " + " ".join(f"{'> ' + str(t):>6}" for t in THRESHOLDS))
    for language in ("C++", "Python", "TypeScript"):
        mine = [f for f in functions if f.language == language]
        counts = " ".join(f"{sum(f.lines > t for f in mine):>6}" for t in THRESHOLDS)
        print(f"{language:<11} {len(mine):>9} {counts}")
    print(f"\nover {args.list} lines:")
    for f in sorted((f for f in functions if f.lines > args.list), key=lambda f: (-f.lines, f.path)):
        print(f"{f.lines:5}  {f.language:<10}  {f.path}:{f.line}  {f.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
