"""The `lahar` command line: one module per command group, each a thin layer over the packages
below (argument parsing, printing, exit codes). Errors the user can act on are one line on stderr
and exit code 2; nothing here holds logic another entry point would need.
"""
