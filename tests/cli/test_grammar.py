"""One CLI grammar across commands (#51), checked on every subcommand's --help as the binary prints it:
  - a file or folder a command writes is `-o/--output` (older spellings may stay beside it as aliases);
  - JSON on stdout is `--json`; `--format` only beside it, where several text formats exist;
  - every command's help shows it used: at least one `gpusqueeze <command> …` line besides CLI11's Usage line.
Usage: python3 tests/cli/test_grammar.py BINARY"""
import re
import subprocess
import sys


def helptext(binary, path):
    p = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, timeout=30)
    if p.returncode != 0:
        sys.exit(f"{' '.join(path)} --help exited {p.returncode}: {p.stderr[-300:]}")
    return p.stdout


def subcommands(text):
    """Names listed under CLI11's "Subcommands:" heading."""
    if "Subcommands:" not in text:
        return []
    names = []
    for line in text.split("Subcommands:", 1)[1].splitlines():
        m = re.match(r"^  ([a-z][a-z0-9-]*)\s{2,}\S", line)
        if m:
            names.append(m.group(1))
        elif line and not line.startswith(" "):
            break
    return names


def options(text):
    """Each option line's names: {'-o', '--output'} for '  -o,--output TEXT  …'."""
    out = []
    section = text.split("Options:", 1)[1] if "Options:" in text else ""
    section = section.split("Subcommands:", 1)[0]
    for line in section.splitlines():
        m = re.match(r"^\s{2,6}((?:-[A-Za-z0-9],)?(?:--[a-z0-9-]+)(?:,--[a-z0-9-]+)*)", line)
        if m:
            out.append(set(m.group(1).split(",")))
    return out


def main():
    binary = sys.argv[1]
    problems, checked = [], 0
    todo = [[name] for name in subcommands(helptext(binary, []))]
    while todo:
        path = todo.pop(0)
        text = helptext(binary, path)
        subs = subcommands(text)
        todo += [path + [s] for s in subs]
        checked += 1
        where = "gpusqueeze " + " ".join(path)
        opts = options(text)
        names = set().union(*opts) if opts else set()
        for group in opts:
            if group & {"--out", "--output", "-o"} and not {"-o", "--output"} <= group:
                problems.append(f"{where}: writes with {','.join(sorted(group))}; the grammar is -o/--output")
        if "--format" in names and "--json" not in names:
            problems.append(f"{where}: --format without --json; JSON is --json everywhere")
        if not subs:
            usage = [l for l in text.splitlines()
                     if not l.startswith("Usage:") and (where + " " in l or l.strip().endswith(where))]
            if not usage:
                problems.append(f"{where}: its help shows no example of it (a '{where} …' line)")
    for p in problems:
        print("FAIL", p)
    print(f"test_grammar: {checked} commands, {len(problems)} problems")
    return 1 if problems or checked < 20 else 0


if __name__ == "__main__":
    sys.exit(main())
