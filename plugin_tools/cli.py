"""The command-line conventions of the project's Python programs.

A usage error is one line, ``PROG: error: MESSAGE (see --help)``, exit status 2, as in the shell
scripts (scripts/lib/common.sh); argparse's own prints the usage and then the error. A program that
a shell script runs takes ``--prog NAME`` first, so that its messages carry the script's name.
"""

import argparse


class OneLineParser(argparse.ArgumentParser):
    """argparse.ArgumentParser whose usage errors are one line, exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def called_as(argv, default):
    """(PROG, the other arguments): PROG from a leading ``--prog NAME``, else DEFAULT."""
    argv = list(argv)
    if argv[:1] == ["--prog"] and len(argv) > 1:
        return argv[1], argv[2:]
    return default, argv
