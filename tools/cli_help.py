"""Reads a command's --help into its parts, for tools/gen-manpage and tools/gen-bash-completion:
the man page and the completion come from the help itself, so they cannot drift from it.

The layout read is CLI11's (mcp-exec) and the same shape written by hand (tools/build-rootfs):
a description line, "Usage: ...", paragraphs, and sections ("Options:") of entries indented two
spaces, whose description starts after two or more spaces or at CLI11's column 30, continued on
lines indented further.
"""
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field

CLI11_COLUMN = 30
# "stdio | http | sse (...)" or "cold | pool: ..." at the start of a description.
CHOICES = re.compile(r'^(\w[\w-]*(?: \| \w[\w-]*)+)\b')
# The variable an option stands for ends its description: "(MCP_EXEC_ADDR)", "(..._UNAUTHENTICATED=1)".
ENV_VAR = re.compile(r'\((MCP_EXEC_[A-Z0-9_]+)(?:=[^)]*)?\)$')


@dataclass
class Entry:
    names: list          # "-h", "--help"; a positional's or a subcommand's name
    arg: str = ''        # TEXT, INT, PATH...; empty for a flag
    text: str = ''

    def choices(self):
        brace = re.search(r':\{([^}]*)\}', self.arg)
        if brace:
            return brace.group(1).split(',')
        match = CHOICES.match(self.text)
        return match.group(1).split(' | ') if match else []

    def env_var(self):
        match = ENV_VAR.search(self.text)
        return match.group(1) if match else None


@dataclass
class Help:
    description: str = ''
    usage: str = ''
    sections: dict = field(default_factory=dict)     # "Options" -> [Entry]
    blocks: list = field(default_factory=list)       # in the help's order: a paragraph's text,
                                                     # or a section's (title, [Entry])


def run_help(program, name, args=()):
    """`program [args] --help`, with name as the program's name (argv[0] and, for a script, $0)."""
    with tempfile.TemporaryDirectory() as tmp:
        link = os.path.join(tmp, name)
        os.symlink(os.path.abspath(program), link)
        return subprocess.run([name, *args, '--help'], executable=link, check=True,
                              stdout=subprocess.PIPE, text=True).stdout


def split_entry_line(line):
    """The left part and the description of an entry's first line."""
    body = line[2:]
    parts = re.split(r' {2,}', body, maxsplit=1)
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(line) > CLI11_COLUMN and line[CLI11_COLUMN - 1] == ' ':
        return line[2:CLI11_COLUMN].strip(), line[CLI11_COLUMN:].strip()
    return body.strip(), ''


def parse_entry(line):
    left, text = split_entry_line(line)
    words = left.split(' ')
    entry = Entry(names=words[0].split(','), text=text)
    rest = words[1:]
    if rest and not rest[0].endswith(':'):
        entry.arg = rest.pop(0)
    if rest:   # CLI11's "Excludes: --file source"
        entry.text = (entry.text + ' ' if entry.text else '') + '[' + ' '.join(rest) + ']'
    return entry


def parse(text):
    help_ = Help()
    section = None
    paragraph = []

    def end_paragraph():
        if paragraph:
            help_.blocks.append(' '.join(paragraph))
            paragraph.clear()

    for line in text.splitlines():
        if not line.strip():
            end_paragraph()
            section = None
        elif line.startswith('Usage: '):
            end_paragraph()
            help_.usage = line[len('Usage: '):].strip()
        elif not line.startswith(' ') and line.endswith(':'):
            end_paragraph()
            section = help_.sections.setdefault(line[:-1], [])
            help_.blocks.append((line[:-1], section))
        elif section is not None and line.startswith('  ') and line[2] != ' ':
            section.append(parse_entry(line))
        elif section:
            last = section[-1]
            last.text = (last.text + ' ' + line.strip()).strip()
        elif not help_.usage and not help_.description:
            help_.description = line.strip()
        else:
            paragraph.append(line.strip())
    end_paragraph()
    return help_


def read(program, name, args=()):
    return parse(run_help(program, name, args))


def subcommands(help_):
    return [entry.names[0] for entry in help_.sections.get('Subcommands', [])]
