#!/usr/bin/env python3
"""Checks the Zephyr commands the docs give against the scripts and files they name.

Reads the docs below and, for every command line in them (code blocks and `inline code`):
  - scripts/zephyr-check: each step is one the script takes, each option one it parses, each
    VAR=value before it a variable its --help documents, each SUITES entry a directory;
  - zephyr-module/scripts/user-flow: options and flows it takes;
  - west patch: `-sm` names qfabric where west.yml puts it (its self path), `-b`/`-l` relative
    to it exist;
  - every modules/lib/qfabric/PATH exists in this repository.
Also: the README's user-flow blocks exist, the default BOARDS of zephyr-check's code is the one
its --help states, and the docs name no step or variable the scripts no longer have.

Usage: check-docs.py   (no arguments; exit status 1 with one line per finding)
"""

import os
import re
import shlex
import sys

TOP = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOCS = [
    "README.md",
    "DEVELOPERS.md",
    "Kconfig",
    "west.yml",
    "zephyr/module.yml",
    "zephyr-module/README.md",
    "zephyr-module/samples/executor/README.md",
    "kernel-patches/zephyr/README.md",
    "kernel-patches/zephyr/patches.yml",
]
ZEPHYR_CHECK = os.path.join(TOP, "scripts", "zephyr-check")
USER_FLOW = os.path.join(TOP, "zephyr-module", "scripts", "user-flow")
USER_FLOW_BLOCKS = ("new-workspace", "existing-workspace", "build")


def read(path):
    with open(os.path.join(TOP, path), encoding="utf-8") as f:
        return f.read()


def help_text(script):
    """The comment block at the top of a script (its --help)."""
    lines = []
    for line in read(script).splitlines()[1:]:
        if not line.startswith("#"):
            break
        lines.append(line[1:])
    return "\n".join(lines)


def zephyr_check_facts():
    code = read("scripts/zephyr-check")
    steps = set(re.search(r"^\s+((?:[\w-]+\|)+[\w-]+)\) steps\+=", code, re.M).group(1).split("|"))
    variables = set(re.findall(r"^#   ([A-Z][A-Z0-9_]+)\b", code, re.M))
    for pair in re.findall(r"^#   ([A-Z_]+(?: / [A-Z_]+)+)", code, re.M):
        variables |= set(pair.split(" / "))
    code_boards = re.search(r'local boards=\$\{BOARDS:-"([^"]+)"\}', code).group(1).split()
    help_boards = re.search(r'BOARDS\s+Twister platforms \(default "([^"]+)"',
                            re.sub(r"\n#\s+", " ", code)).group(1).split()
    # Options taking a value besides --workspace (e.g. `--sets) diff_sets=$2; shift 2 ;;`).
    options = set(re.findall(r"^\s+(--[a-z][\w-]*)\) \w+=\$2; shift 2 ;;", code, re.M))
    return steps, variables, code_boards, help_boards, options


def commands(text):
    """Command lines in a doc: the lines of its code blocks (continuations joined) and its
    `inline code` spans."""
    found = []
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        found += [line.split(" # ")[0] for line in joined.splitlines()]
    prose = re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.S)
    found += re.findall(r"`([^`\n]+)`", re.sub(r"\n(?!\n)", " ", prose))
    # Kconfig help and YAML comments: indented command lines.
    found += [m.strip() for m in re.findall(r"^[#\t ]+((?:west|scripts/|modules/).*)$", text, re.M)]
    return found


def words(line):
    try:
        return shlex.split(line, comments=False)
    except ValueError:
        return line.split()


def arguments(tokens, script, valued):
    """The words after `script` in a command; an option in `valued` is skipped with its value."""
    index = next(i for i, t in enumerate(tokens) if t.endswith(script))
    rest = iter(tokens[index + 1:])
    for token in rest:
        if token in valued:
            next(rest, None)
        else:
            yield token


def check_zephyr_check(doc, line, facts, errors):
    steps, variables, _, _, options = facts
    tokens = words(line)
    index = next(i for i, t in enumerate(tokens) if t.endswith("zephyr-check"))
    for token in tokens[:index]:
        if "=" in token:
            name, value = token.split("=", 1)
            if name not in variables and name not in ("PATH",):
                errors.append(f"{doc}: `{line}`: {name} is not a variable zephyr-check documents")
            if name == "SUITES":
                for suite in value.split():
                    if not os.path.isdir(os.path.join(TOP, "zephyr-module", suite)):
                        errors.append(f"{doc}: `{line}`: SUITES entry zephyr-module/{suite} "
                                      "does not exist")
    for token in arguments(tokens, "zephyr-check", ("--workspace", "-w", *options)):
        if token in ("-h", "--help", "...", "|", "&&", ";"):
            continue
        if token.startswith("-"):
            errors.append(f"{doc}: `{line}`: zephyr-check takes no option {token}")
        elif not re.fullmatch(r"[a-z]+", token):
            break
        elif token not in steps:
            errors.append(f"{doc}: `{line}`: zephyr-check has no step '{token}' "
                          f"(steps: {' '.join(sorted(steps))})")


def check_user_flow(doc, line, errors):
    for token in arguments(words(line), "scripts/user-flow", ("--from", "--dir")):
        if token not in ("-h", "--help", "new", "existing"):
            errors.append(f"{doc}: `{line}`: user-flow takes no argument '{token}'")


def self_path():
    return re.search(r"^  self:\n    path: (\S+)", read("west.yml"), re.M).group(1)


def check_west_patch(doc, line, errors):
    tokens = words(line)
    opts = {}
    for flag in ("-sm", "-b", "-l"):
        if flag in tokens and tokens.index(flag) + 1 < len(tokens):
            opts[flag] = tokens[tokens.index(flag) + 1]
    module = opts.get("-sm")
    if module is not None and not module.startswith(("<", "$", "/")) and module != self_path():
        errors.append(f"{doc}: `{line}`: -sm {module}, but west.yml puts qfabric at "
                      f"{self_path()}")
    for flag, kind in (("-b", os.path.isdir), ("-l", os.path.isfile)):
        path = opts.get(flag)
        if path and not path.startswith(("/", "$", "<")) and not kind(os.path.join(TOP, path)):
            errors.append(f"{doc}: `{line}`: {flag} {path} does not exist in the repository")


def check_paths(doc, text, errors):
    prefix = self_path() + "/"
    for path in set(re.findall(r"(?<![\w/.-])" + re.escape(prefix) + r"([\w./-]+)", text)):
        path = path.rstrip(".")
        if path and not os.path.exists(os.path.join(TOP, path)):
            errors.append(f"{doc}: {prefix}{path} does not exist in the repository")


def check_user_flow_blocks(errors):
    text = read("zephyr-module/README.md")
    for name in USER_FLOW_BLOCKS:
        if not re.search(rf"<!-- user-flow: {name} -->\n```sh\n", text):
            errors.append(f"zephyr-module/README.md: no sh block after <!-- user-flow: {name} --> "
                          "(zephyr-module/scripts/user-flow runs it)")


def main():
    errors = []
    facts = zephyr_check_facts()
    if facts[2] != facts[3]:
        errors.append(f"scripts/zephyr-check: BOARDS defaults to {' '.join(facts[2])} in its "
                      f"code, its --help says {' '.join(facts[3])}")
    count = 0
    for doc in DOCS:
        if not os.path.exists(os.path.join(TOP, doc)):
            continue
        # "(BOARD, BOARD; `BOARDS` for more)": the boards zephyr-check runs by default.
        flat = re.sub(r"\s+", " ", read(doc))
        for listed in re.findall(r"\(([^()]*?);? `BOARDS` for more\)", flat):
            boards = [b.strip(" `") for b in listed.split(",")]
            if boards != facts[2]:
                errors.append(f"{doc}: says zephyr-check runs {', '.join(boards)} by default; "
                              f"its BOARDS default is {' '.join(facts[2])}")
        if not os.path.exists(os.path.join(TOP, doc)):
            continue
        text = read(doc)
        for line in commands(text):
            if re.search(r"(^|[\s/])zephyr-check(\s|$)", line) and "check-against" not in line:
                count += 1
                check_zephyr_check(doc, line, facts, errors)
            if re.search(r"scripts/user-flow(\s|$)", line):
                count += 1
                check_user_flow(doc, line, errors)
            if re.search(r"\bwest patch\b", line):
                count += 1
                check_west_patch(doc, line, errors)
        check_paths(doc, text, errors)
    check_user_flow_blocks(errors)
    for error in sorted(set(errors)):
        print(f"docs: {error}", file=sys.stderr)
    if errors:
        return 1
    print(f"docs: {count} commands in {len(DOCS)} files match scripts/zephyr-check, "
          f"zephyr-module/scripts/user-flow and west.yml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
