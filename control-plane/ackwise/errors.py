"""What kind of failure an error is, for whoever reports it (the CLI's exit codes).

``InputError`` marks a request that is wrong as given: a value out of range, a name the program
does not have, a file that does not validate. Its message names the parameter as the user wrote
it and says what would be accepted. The CLI exits 2 for these and 1 for a valid request that
failed, so a script can tell "fix your command" from "the switch refused".

The concrete classes keep their own bases (``ValueError``, ``LookupError``) so existing callers
that catch those still do; this is a mixin, not a replacement.
"""

from __future__ import annotations

import re


class InputError(Exception):
    """The request is invalid as given; str() is one line naming the parameter and the fix."""


# Python decodes argv bytes that are not UTF-8 as lone surrogates (U+DC80..U+DCFF, PEP 383);
# printed as they are they raise or come out as a repr escape. Shown as the bytes they were.
_SURROGATE_ESCAPE = re.compile(r"\\udc([89a-f][0-9a-f])")


def printable(text: str) -> str:
    """``text`` as one printable line: bytes that were not UTF-8 as \\xNN, newlines as spaces."""
    raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    raw = _SURROGATE_ESCAPE.sub(r"\\x\1", raw)
    return " ".join(raw.split("\n")).replace("\r", " ")


def shown(text: object) -> str:
    """A value the user typed, quoted for a message, without Python's repr escapes."""
    return f"'{printable(str(text))}'"


class BadOption(InputError, ValueError):
    """An option's value is out of its range; a ValueError too, for callers that catch those."""
