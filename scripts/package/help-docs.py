#!/usr/bin/env python3
"""The manual page and the bash completion of gnss-hat, both made from the program's own --help.

    scripts/package/help-docs.py BINARY --version 0.4.0 --date 2026-12-05 --man OUT.1 --completion OUT

BINARY is run (under binfmt_misc's emulator when it is foreign) for `gnss-hat --help` and each
command's `COMMAND --help`; nothing here repeats what the help says, so the page and the completion
follow the program. The help has one shape, which `parse` reads:

    usage: gnss-hat COMMAND [OPTIONS] [ARGUMENTS]     the usage line
      A Raspberry Pi GNSS hat, ...                     the summary (indented)
    commands:                                          a heading: a lower-case line ending with ':'
      watch       follow a receiver: ...               its items: indented TERM, two spaces, text
    'gnss-hat COMMAND --help' describes one command.   free text (prose, `on  text` definitions,
                                                       `1. text` steps, indented verbatim lines,
                                                       `example: ...` lines)
"""

import argparse
import re
import subprocess
import sys

HEADING = re.compile(r"^[a-z][a-z ()]*:$")
ITEM = re.compile(r"^(\s+)(\S.*?)\s{2,}(\S.*)$")
DEFINITION = re.compile(r"^(\S+)\s{2,}(\S.*)$")
STEP = re.compile(r"^(\d+\.)\s+(\S.*)$")
EXAMPLE = re.compile(r"^examples?: (\S.*)$")
# What the package adds around the program: where its files are (the man page's FILES section).
FILES = [
    ("/etc/default/gnss-hat", "the service's settings: GNSSHAT_BOARD and GNSSHAT_OPTIONS (a conffile)"),
    ("/usr/lib/systemd/system/gnss-hat.service", "the systemd unit running gnss-hat serve as the gnss-hat user "
     "(installed, not enabled: systemctl enable --now gnss-hat)"),
    ("/etc/gnss-hat/boards", "board files of your own (NAME.json), found by --board NAME"),
    ("/var/lib/gnss-hat", "the service's state: aiding data and the MQTT journal (removed on purge)"),
]
SEE_ALSO = ["gpsd(8)", "gpspipe(1)", "chronyd(8)", "systemctl(1)"]


class Page:
    """One --help text: the usage line, the summary, and its blocks in order."""

    def __init__(self, usage, summary, blocks):
        self.usage = usage
        self.summary = summary
        # ("list", heading, [(term, text)]) or ("text", [line, ...])
        self.blocks = blocks

    def items(self, heading_prefix):
        return [item for kind, *rest in self.blocks if kind == "list" and rest[0].startswith(heading_prefix)
                for item in rest[1]]


def parse(text):
    lines = text.rstrip("\n").split("\n")
    if not lines or not lines[0].startswith("usage: "):
        raise ValueError(f"a --help text starts with 'usage: ', not {lines[0]!r}")
    usage = lines[0][len("usage: "):]
    i = 1
    summary = []
    while i < len(lines) and lines[i].startswith(" "):
        summary.append(lines[i].strip())
        i += 1
    blocks = []
    while i < len(lines):
        if HEADING.match(lines[i]):
            heading = lines[i][:-1]
            i += 1
            items = []
            indent = None
            while i < len(lines) and lines[i].startswith(" "):
                match = ITEM.match(lines[i])
                if heading.startswith("example"):
                    # One example a line: the command, and what it shows after a gap, if anything.
                    items.append(list(match.group(2, 3)) if match else [lines[i].strip(), ""])
                elif match and (indent is None or len(match.group(1)) == indent):
                    indent = len(match.group(1))
                    items.append([match.group(2), match.group(3)])
                elif items:
                    items[-1][1] += " " + lines[i].strip()
                else:
                    items.append([lines[i].strip(), ""])
                i += 1
            blocks.append(("list", heading, [tuple(item) for item in items]))
        else:
            text_lines = []
            while i < len(lines) and not HEADING.match(lines[i]):
                text_lines.append(lines[i])
                i += 1
            blocks.append(("text", text_lines))
    return Page(usage, " ".join(summary), blocks)


def help_text(binary, *arguments):
    result = subprocess.run([binary, *arguments, "--help"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(arguments)} --help exited with {result.returncode}: "
                           f"{result.stderr.strip()}")
    return result.stdout


# --- The manual page (man(7) macros) ---

def roff(text):
    """Text escaped for roff: backslashes, hyphen-minus (so options can be copied) and a leading dot."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def option_term(term):
    """`--board NAME|PATH` and `-v, --verbose` as bold options and italic arguments."""
    parts = []
    for word in term.split(" "):
        bare = word.rstrip(",")
        if bare.startswith("-"):
            parts.append(f"\\fB{roff(bare)}\\fR" + word[len(bare):])
        else:
            parts.append(f"\\fI{roff(word)}\\fR")
    return " ".join(parts)


def synopsis(usage):
    """`gnss-hat serve [OPTIONS] FILE|-`: the program and command bold, the rest italic."""
    words = usage.split(" ")
    command = [w for w in words[:2] if re.fullmatch(r"[a-z][a-z-]*", w)]
    rest = " ".join(words[len(command):])
    rest = re.sub(r"\b([A-Z]{2,})\b", lambda m: f"\\fI{m.group(1)}\\fR", roff(rest))
    return f"\\fB{roff(' '.join(command))}\\fR {rest}\n"


def text_block(lines):
    """Free text: prose paragraphs, `term  text` definitions, numbered steps, verbatim lines, examples."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        example = EXAMPLE.match(line)
        definition = DEFINITION.match(line)
        step = STEP.match(line)
        if example:
            commands = []
            while i < len(lines) and EXAMPLE.match(lines[i]):
                commands.append(roff(EXAMPLE.match(lines[i]).group(1)))
                i += 1
            title = "Example:" if len(commands) == 1 else "Examples:"
            out.append(f".PP\n{title}\n.RS 4\n.nf\n" + "\n".join(commands) + "\n.fi\n.RE\n")
        elif (definition or step) and not line.startswith(" "):
            body = [(definition or step).group(2)]
            i += 1
            while i < len(lines) and lines[i].startswith(" "):
                body.append(lines[i].strip())
                i += 1
            if definition:
                out.append(f".TP\n.B {roff(definition.group(1))}\n{roff(' '.join(body))}\n")
            else:
                out.append(f".IP {step.group(1)} 4\n{roff(' '.join(body))}\n")
        elif line.startswith(" "):
            verbatim = []
            while i < len(lines) and lines[i].startswith(" "):
                verbatim.append(roff(lines[i].strip()))
                i += 1
            out.append(".RS 4\n.nf\n" + "\n".join(verbatim) + "\n.fi\n.RE\n")
        else:
            paragraph = []
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(" ") and not (
                    EXAMPLE.match(lines[i]) or DEFINITION.match(lines[i]) or STEP.match(lines[i])):
                paragraph.append(roff(lines[i]))
                i += 1
                # A short line ending a sentence ends its paragraph (the help wraps near 100 columns).
                if paragraph[-1].endswith(".") and len(lines[i - 1]) < 75:
                    break
            out.append(".PP\n" + "\n".join(paragraph) + "\n")
    return "".join(out)


def list_block(items, option_like):
    out = []
    for term, text in items:
        shown = option_term(term) if option_like else f"\\fB{roff(term)}\\fR"
        out.append(f".TP\n{shown}\n{roff(text)}\n")
    return "".join(out)


def examples_block(items):
    lines = []
    for term, text in items:
        lines.append(roff(term) + (f"    # {roff(text)}" if text else ""))
    return ".PP\nExamples:\n.RS 4\n.nf\n" + "\n".join(lines) + "\n.fi\n.RE\n"


def command_section(name, page, common_terms):
    out = [f".SS {roff(name)}\n", ".nf\n" + synopsis(page.usage) + ".fi\n"]
    out.append(".PP\n" + roff(page.summary[:1].upper() + page.summary[1:]) + "\n")
    for kind, *rest in page.blocks:
        if kind == "text":
            out.append(text_block(rest[0]))
        elif rest[0].startswith("example"):
            out.append(examples_block(rest[1]))
        else:
            own = [item for item in rest[1] if item[0] not in common_terms]
            if own:
                out.append(f".PP\n{roff(rest[0][:1].upper() + rest[0][1:])}:\n.RS 4\n")
                out.append(list_block(own, option_like=True) + ".RE\n")
    return "".join(out)


def man_page(top, commands, version, date):
    summary = top.summary.rstrip(".")
    common = top.items("common options")
    common_terms = {term for term, _ in common}
    out = [f'.TH GNSS-HAT 1 "{date}" "gnss-hat {version}" "User Commands"\n',
           ".nh\n.ad l\n",  # no hyphenation, ragged right: options and paths stay whole
           f".SH NAME\ngnss-hat \\- {roff(summary[:1].lower() + summary[1:])}\n",
           ".SH SYNOPSIS\n.nf\n" + synopsis(top.usage),
           "\\fBgnss\\-hat\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR\n\\fBgnss\\-hat \\-\\-version\\fR\n.fi\n",
           f".SH DESCRIPTION\n{roff(top.summary)}\n"]
    for kind, *rest in top.blocks:
        if kind == "text":
            out.append(text_block(rest[0]))
    out.append(".SH COMMANDS\n")
    out.append(list_block(top.items("commands"), option_like=False))
    out.append(".PP\nEach command takes the options below (COMMON OPTIONS) as well as its own.\n")
    for name, page in commands:
        out.append(command_section(name, page, common_terms))
    out.append(".SH COMMON OPTIONS\n" + list_block(common, option_like=True))
    out.append(".TP\n\\fB\\-\\-version\\fR\nprint the version (gnss\\-hat " + roff(version) + ") and exit\n")
    out.append(".SH EXIT STATUS\n" + list_block(top.items("exit status"), option_like=False))
    out.append(".SH FILES\n" + "".join(f".TP\n.I {roff(path)}\n{roff(text)}\n" for path, text in FILES))
    out.append(".SH SEE ALSO\n" + ",\n".join(
        f".BR {name.split('(')[0]} ({name.split('(')[1]}" for name in SEE_ALSO) + "\n")
    return "".join(out)


# --- The bash completion ---

def option_words(items):
    """Each option's spellings (`-v, --verbose` gives two) and its argument, if any."""
    options = []
    for term, _ in items:
        spellings = [w.rstrip(",") for w in term.split(" ") if w.startswith("-")]
        argument = " ".join(w for w in term.split(" ") if not w.startswith("-"))
        options.append((spellings, argument))
    return options


def argument_completion(argument):
    """How to complete an option's argument, from its name in the help: a board, a file, a directory."""
    names = argument.split("|")
    if "NAME" in names and "PATH" in names:
        return "board"
    if "DIR" in names:
        return "directory"
    if "FILE" in names or "PATH" in names:
        return "file"
    return "none"


def positional_completion(usage):
    """The arguments after [OPTIONS] in a usage line: a choice of words (on|off|status), files, or nothing."""
    rest = usage.split("[OPTIONS]", 1)[1].strip() if "[OPTIONS]" in usage else ""
    if not rest:
        return ("none", [])
    choices = rest.split("|")
    if all(re.fullmatch(r"[a-z][a-z-]*", choice) for choice in choices):
        return ("words", choices)
    if "FILE" in choices:
        return ("file", [c for c in choices if c == "-"])
    return ("none", [])


def shell_words(words):
    return " ".join(words)


def completion(top, commands, version):
    names = [name for name, _ in commands]
    value_cases = {}
    command_cases = []
    for name, page in commands:
        options = option_words(page.items("options"))
        for spellings, argument in options:
            if argument:
                value_cases.setdefault(argument_completion(argument), set()).update(spellings)
        flags = [s for spellings, _ in options for s in spellings]
        kind, words = positional_completion(page.usage)
        command_cases.append(f"        {name})\n"
                             f"            options='{shell_words(flags)}'\n"
                             f"            positional={kind}\n"
                             f"            choices='{shell_words(words)}'\n"
                             f"            ;;\n")
    actions = {
        # A board's name (each once: `gnss-hat boards` lists shadowed boards again) or a board file.
        "board": 'COMPREPLY=($(compgen -W "$(gnss-hat boards 2>/dev/null | awk \'/^[^ ]/ && !seen[$1]++ {print $1}\')" '
                 '-- "$cur")); _filedir json',
        "file": "_filedir",
        "directory": "_filedir -d",
        "none": "",  # a number, an address, a name: nothing to offer
    }
    value_lines = "".join(f"        {'|'.join(sorted(spellings))})\n"
                          + (f"            {actions[kind]}\n" if actions[kind] else "")
                          + "            return\n            ;;\n" for kind, spellings in sorted(value_cases.items()))
    return f"""# bash completion for gnss-hat {version}: its commands and their options, made by
# scripts/package/help-docs.py from gnss-hat's own --help output.

_gnss_hat() {{
    local cur prev words cword
    _init_completion || return
    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W '{shell_words(names)} --help --version' -- "$cur"))
        return
    fi
    case $prev in
{value_lines}    esac
    local options positional choices
    case ${{words[1]}} in
{"".join(command_cases)}        *)
            return
            ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
    elif [[ $positional == words ]]; then
        COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    elif [[ $positional == file ]]; then
        _filedir
        COMPREPLY+=($(compgen -W "$choices" -- "$cur"))
    fi
}} &&
    complete -F _gnss_hat gnss-hat
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary")
    parser.add_argument("--version", required=True, help="the version the page names")
    parser.add_argument("--date", required=True, help="the page's date, YYYY-MM-DD")
    parser.add_argument("--man", required=True, help="where the manual page goes")
    parser.add_argument("--completion", required=True, help="where the bash completion goes")
    arguments = parser.parse_args()
    try:
        top = parse(help_text(arguments.binary))
        commands = [(name, parse(help_text(arguments.binary, name))) for name, _ in top.items("commands")]
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
        sys.exit(f"help-docs: {error}")
    if not commands:
        sys.exit(f"help-docs: {arguments.binary} --help lists no commands")
    with open(arguments.man, "w") as out:
        out.write(man_page(top, commands, arguments.version, arguments.date))
    with open(arguments.completion, "w") as out:
        out.write(completion(top, commands, arguments.version))


if __name__ == "__main__":
    main()
