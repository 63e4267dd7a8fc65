#!/usr/bin/env python3
"""Lists the Swift functions longer than a limit (80 lines by default), from the line of their
declaration to the line of their closing brace: `func`, `init`, `deinit` and `subscript` bodies, nested
ones counted on their own and inside their parent.

    scripts/function-length.py [--limit N] [--exclude DIR]... [PATH...]

PATH defaults to Sources/ (GNSSHatBench, whose benchmark scripts are long on purpose, excluded by
default; `--exclude` adds more). Prints `path:line: name is N lines` for each one over the limit, and
exits 1 when there is any. Strings (plain, multi-line and raw) and comments are skipped when matching
braces, so a `{` in a string or a comment does not count.
"""

import argparse
import os
import re
import sys

DECLARATION = re.compile(
    r"\b(?:func\s+(?P<func>[^\s(<]+)|(?P<init>init)[?!]?\s*[(<]|(?P<deinit>deinit)\b|(?P<subscript>subscript)\s*[(<])"
)

STRING_START = re.compile(r'(#*)("""|")')


def code_only(text):
    """`text` with every comment and string literal blanked out (newlines kept, so lines still count)."""
    out = []
    i = 0
    n = len(text)
    # A stack of string contexts: (hashes, multiline) for each open string; interpolation depth per string.
    stack = []

    def blank(segment):
        return "".join("\n" if c == "\n" else " " for c in segment)

    while i < n:
        if stack and stack[-1][0] == "string":
            _, hashes, multiline = stack[-1]
            close = ('"""' if multiline else '"') + "#" * hashes
            if text.startswith("\\" + "#" * hashes + "(", i):
                # An interpolation: code again until its parenthesis closes.
                length = 2 + hashes
                out.append(" " * length)
                i += length
                stack.append(("interpolation", 1))
                continue
            if hashes == 0 and text[i] == "\\" and i + 1 < n:
                out.append(blank(text[i:i + 2]))
                i += 2
                continue
            if text.startswith(close, i):
                out.append(" " * len(close))
                i += len(close)
                stack.pop()
                continue
            out.append("\n" if text[i] == "\n" else " ")
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end == -1 else end
            out.append(" " * (end - i))
            i = end
            continue
        if text.startswith("/*", i):
            depth = 0
            j = i
            while j < n:
                if text.startswith("/*", j):
                    depth += 1
                    j += 2
                elif text.startswith("*/", j):
                    depth -= 1
                    j += 2
                    if depth == 0:
                        break
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
            continue
        match = STRING_START.match(text, i) if text[i] in '"#' else None
        if match:
            hashes = len(match.group(1))
            multiline = match.group(2) == '"""'
            out.append(" " * len(match.group(0)))
            i += len(match.group(0))
            stack.append(("string", hashes, multiline))
            continue
        c = text[i]
        if stack and stack[-1][0] == "interpolation":
            if c == "(":
                stack[-1] = ("interpolation", stack[-1][1] + 1)
            elif c == ")":
                depth = stack[-1][1] - 1
                if depth == 0:
                    stack.pop()
                    out.append(" ")
                    i += 1
                    continue
                stack[-1] = ("interpolation", depth)
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(line, name, length in lines) of every function body in the file at `path`."""
    with open(path, encoding="utf-8") as source:
        code = code_only(source.read())
    line_starts = [0]
    for index, character in enumerate(code):
        if character == "\n":
            line_starts.append(index + 1)

    def line_of(offset):
        low, high = 0, len(line_starts)
        while low + 1 < high:
            middle = (low + high) // 2
            if line_starts[middle] <= offset:
                low = middle
            else:
                high = middle
        return low + 1

    found = []
    for match in DECLARATION.finditer(code):
        name = match.group("func") or match.group("init") or match.group("deinit") or match.group("subscript")
        # The body: the first `{` after the declaration at bracket depth 0 (past parameters, generics and
        # `where` clauses); a protocol requirement has none before the next declaration or `}`.
        depth = 0
        index = match.end()
        body = None
        while index < len(code):
            character = code[index]
            # `<` opens generic arguments only right after a name (`init<T>`, `Array<Int>`), never as an
            # operator (`16 << 20`); `>` of `->` closes nothing.
            previous = code[index - 1] if index > 0 else " "
            if character in "([" or (character == "<" and (previous.isalnum() or previous == "_")):
                depth += 1
            elif character in ")]" or (character == ">" and previous != "-"):
                depth = max(depth - 1, 0)
            elif character == "{" and depth == 0:
                body = index
                break
            elif character == "}" and depth == 0:
                break
            elif character == "\n" and depth == 0:
                rest = code[index + 1:].lstrip()
                # A requirement (or an abstract declaration) ends at its line when the next line starts
                # another member; a signature continued over lines starts with `->`, `throws`, `where`...
                if not re.match(r"(->|throws|rethrows|async|where|\{|\)|[A-Za-z_]+\s*:)", rest):
                    break
            index += 1
        if body is None:
            continue
        depth = 0
        index = body
        while index < len(code):
            if code[index] == "{":
                depth += 1
            elif code[index] == "}":
                depth -= 1
                if depth == 0:
                    break
            index += 1
        start = line_of(match.start())
        end = line_of(index)
        found.append((start, name, end - start + 1))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--exclude", action="append", default=["Sources/GNSSHatBench"])
    parser.add_argument("paths", nargs="*", default=["Sources"])
    arguments = parser.parse_args()
    excluded = [os.path.normpath(path) for path in arguments.exclude]
    over = []
    for root in arguments.paths:
        for directory, _, names in os.walk(root):
            if any(os.path.normpath(directory).startswith(path) for path in excluded):
                continue
            for name in sorted(names):
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    for line, function, length in functions(path):
                        if length > arguments.limit:
                            over.append((path, line, function, length))
    for path, line, function, length in sorted(over):
        print(f"{path}:{line}: {function} is {length} lines (limit {arguments.limit})")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
