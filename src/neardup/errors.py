"""Every error neardup raises on purpose, in one tree.

Each error also subclasses the builtin a caller would catch without knowing neardup
(``ValueError`` for bad values, ``KeyError`` for unknown ids, ...), and carries the process
exit code the CLI uses and the HTTP status the service answers with::

    NearDupError                      exit 1   HTTP 500
    ├── ConfigError(ValueError)       exit 2   HTTP 400   invalid parameter or combination
    ├── SchemeMismatchError(ValueError)
    │                                 exit 2   HTTP 400   signatures of different schemes compared
    ├── InputError(ValueError)        exit 65  HTTP 422   a document or request is malformed
    │   ├── InputTypeError(TypeError) exit 65  HTTP 422   wrong type (bytes where text is due, ...)
    │   ├── InputTooLargeError        exit 65  HTTP 413   over a documented size limit
    │   └── SignatureFormatError      exit 65  HTTP 422   bytes that are not a neardup signature
    ├── NotFoundError(KeyError)       exit 66  HTTP 404   unknown document / event id
    ├── ConflictError(ValueError)     exit 65  HTTP 409   same id, different content
    ├── CapacityError(MemoryError)    exit 2   HTTP 507   a fixed memory budget cannot hold the work
    ├── AuthError(PermissionError)    exit 77  HTTP 401   missing or wrong API token
    └── StoreError(OSError)           exit 74  HTTP 503   the store cannot be read or written
        ├── IncompleteOutputError     exit 74  HTTP 503   a partial output was found
        ├── StoreCorruptError         exit 74  HTTP 500   stored data fails its integrity check
        └── StateFileError            exit 74  HTTP 503   a saved state file (checkpoint) is
                                                          damaged or not of this store's history

Exit codes follow BSD ``sysexits.h`` where one fits (65 data error, 66 no input, 74 I/O
error, 77 permission denied); 2 is click's usage error.  No ``assert`` guards anything a
caller can trigger: every check a caller can fail raises one of these.
"""

from __future__ import annotations

__all__ = [
    "AuthError",
    "CapacityError",
    "ConfigError",
    "ConflictError",
    "IncompleteOutputError",
    "InputError",
    "InputTooLargeError",
    "InputTypeError",
    "NearDupError",
    "NotFoundError",
    "SchemeMismatchError",
    "SignatureFormatError",
    "StateFileError",
    "StoreCorruptError",
    "StoreError",
]


class NearDupError(Exception):
    """Root of every error neardup raises on purpose."""

    exit_code: int = 1
    http_status: int = 500

    def __str__(self) -> str:
        # KeyError quotes its message with repr(); every neardup error prints plain text.
        return str(self.args[0]) if self.args else self.__class__.__name__


class ConfigError(NearDupError, ValueError):
    """A parameter is out of range, or parameters do not fit together."""

    exit_code = 2
    http_status = 400


class SchemeMismatchError(NearDupError, ValueError):
    """Two signatures made by different schemes (or parameters) were compared."""

    exit_code = 2
    http_status = 400


class InputError(NearDupError, ValueError):
    """A document, a line of input or a request body is malformed."""

    exit_code = 65
    http_status = 422


class InputTypeError(InputError, TypeError):
    """An argument has the wrong type, e.g. ``bytes`` where ``str`` text is expected."""


class InputTooLargeError(InputError):
    """An input is over a documented size limit."""

    http_status = 413


class SignatureFormatError(InputError):
    """Bytes that do not decode as a neardup signature (bad magic, version or length)."""


class NotFoundError(NearDupError, KeyError):
    """An id (document, event, ...) is not known to the store."""

    exit_code = 66
    http_status = 404


class ConflictError(NearDupError, ValueError):
    """The same id was given again with different content."""

    exit_code = 65
    http_status = 409


class CapacityError(NearDupError, MemoryError):
    """A fixed memory budget is too small for the smallest unit of work."""

    exit_code = 2
    http_status = 507


class AuthError(NearDupError, PermissionError):
    """A write was attempted without the configured API token."""

    exit_code = 77
    http_status = 401


class StoreError(NearDupError, OSError):
    """The store cannot be opened, read or written."""

    exit_code = 74
    http_status = 503


class IncompleteOutputError(StoreError):
    """An output file exists but was not finished; it is never mistaken for a complete one."""


class StoreCorruptError(StoreError):
    """Stored data fails its integrity check: a text that does not match its stored hash,
    bytes that do not decode.  The message names the articles; nothing is answered from
    them (a server-side fault: HTTP 500, not the 503 of an unavailable store)."""

    http_status = 500


class StateFileError(StoreError):
    """A saved state file (an index checkpoint) is missing parts, damaged, or was not made
    from this store's history.  Callers rebuild the state from the store instead."""
