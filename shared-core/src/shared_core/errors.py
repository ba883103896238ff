"""The one exception type for bad input from a user, so every console script reports it alike.

`InputError` is a `ValueError` (library callers catch it as one); a console script built with
`shared_core.cli.make_main` prints it as one ``error:`` line with exit status 2, without a
traceback. The readers of `shared_core.data` raise it for a malformed or empty file (naming the
file, the line and what was expected) and for a wrong argument; `shared_core.cli.UsageError`
(bad command-line input) is one.
"""


class InputError(ValueError):
    """Bad input (a malformed file, a wrong value): one ``error:`` line in a console script."""
