"""The :class:`Signature` every scheme returns, and its byte format.

A signature is an immutable array of unsigned integers plus the *scheme id* of the exact
scheme and parameters that made it (see :mod:`neardup.config`).  Comparing signatures whose
scheme ids differ raises :class:`~neardup.errors.SchemeMismatchError`.

Byte format (all integers little-endian)::

    offset  size  field
    0       4     magic b"NDSG"
    4       1     format version (1)
    5       1     value width in bytes (4 = uint32, 8 = uint64)
    6       2     length S of the scheme id (uint16)
    8       S     scheme id, ASCII
    8+S     4     number N of values (uint32)
    12+S    N*w   the values

A signature round-trips exactly: ``Signature.from_bytes(sig.to_bytes()) == sig``.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from neardup.errors import SchemeMismatchError, SignatureFormatError

__all__ = ["Signature", "require_same_scheme"]

_MAGIC = b"NDSG"
_FORMAT_VERSION = 1
_DTYPES: dict[int, np.dtype[Any]] = {4: np.dtype("<u4"), 8: np.dtype("<u8")}
_HEAD = struct.Struct("<4sBBH")
_COUNT = struct.Struct("<I")


class Signature:
    """An immutable signature: ``scheme_id`` and read-only, C-contiguous, little-endian
    ``values`` (uint32 or uint64).

    Writable input arrays are copied; an array that is already read-only, contiguous and
    little-endian is kept as it is (the schemes hand over fresh arrays, and this saves a copy
    per signature).  Compiled code reads ``values`` in place, relying on that layout.
    """

    __slots__ = ("_bytes", "_digest", "scheme_id", "values")

    scheme_id: str
    values: npt.NDArray[np.unsignedinteger[Any]]
    _bytes: bytes | None
    _digest: bytes | None

    def __init__(self, scheme_id: str, values: npt.ArrayLike) -> None:
        arr = np.asarray(values)
        if arr.dtype not in (np.uint32, np.uint64) or arr.ndim != 1:
            raise SignatureFormatError(
                f"signature values must be a 1-d uint32 or uint64 array, got {arr.dtype} "
                f"with {arr.ndim} dimensions"
            )
        if not scheme_id.isascii() or not scheme_id or len(scheme_id) > 0xFFFF:
            raise SignatureFormatError(f"scheme id must be non-empty ASCII, got {scheme_id!r}")
        if arr.flags.writeable or arr.dtype.byteorder == ">" or not arr.flags.c_contiguous:
            # Own a read-only little-endian copy, so the caller cannot change a signature.
            arr = arr.astype(arr.dtype.newbyteorder("<"), copy=True)
            arr.flags.writeable = False
        object.__setattr__(self, "scheme_id", scheme_id)
        object.__setattr__(self, "values", arr)
        object.__setattr__(self, "_bytes", None)
        object.__setattr__(self, "_digest", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Signature is immutable")

    @property
    def scheme(self) -> str:
        """The method name part of the scheme id (``"minhash"``, ``"sentences"``, ...)."""
        return self.scheme_id.split("/", 1)[0]

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __repr__(self) -> str:
        return f"Signature({self.scheme_id!r}, {len(self)} values)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Signature):
            return NotImplemented
        return self.to_bytes() == other.to_bytes()

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    def to_bytes(self) -> bytes:
        """The documented little-endian byte format (cached)."""
        cached: bytes | None = self._bytes
        if cached is None:
            sid = self.scheme_id.encode("ascii")
            cached = (
                _HEAD.pack(_MAGIC, _FORMAT_VERSION, self.values.dtype.itemsize, len(sid))
                + sid
                + _COUNT.pack(len(self))
                + self.values.tobytes()
            )
            object.__setattr__(self, "_bytes", cached)
        return cached

    def digest(self) -> bytes:
        """The 128-bit xxh3 digest of :meth:`to_bytes` (cached): a deterministic key of the
        signature, scheme id included, for caches keyed by sets of signatures."""
        cached: bytes | None = self._digest
        if cached is None:
            cached = xxhash.xxh3_128_digest(self.to_bytes())
            object.__setattr__(self, "_digest", cached)
        return cached

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> Signature:
        """Decode :meth:`to_bytes` output; ``SignatureFormatError`` on anything else."""
        buf = bytes(data)
        if len(buf) < _HEAD.size:
            raise SignatureFormatError(f"signature too short ({len(buf)} bytes)")
        magic, version, width, sid_len = _HEAD.unpack_from(buf, 0)
        if magic != _MAGIC:
            raise SignatureFormatError("not a neardup signature (bad magic)")
        if version != _FORMAT_VERSION:
            raise SignatureFormatError(f"unsupported signature format version {version}")
        dtype = _DTYPES.get(width)
        if dtype is None:
            raise SignatureFormatError(f"unsupported value width {width}")
        pos = _HEAD.size
        if len(buf) < pos + sid_len + _COUNT.size:
            raise SignatureFormatError("signature truncated in its header")
        try:
            scheme_id = buf[pos : pos + sid_len].decode("ascii")
        except UnicodeDecodeError as exc:
            raise SignatureFormatError("scheme id is not ASCII") from exc
        pos += sid_len
        (count,) = _COUNT.unpack_from(buf, pos)
        pos += _COUNT.size
        if len(buf) != pos + count * width:
            raise SignatureFormatError(
                f"signature body is {len(buf) - pos} bytes, expected {count * width}"
            )
        return cls(scheme_id, np.frombuffer(buf, dtype=dtype, count=count, offset=pos))


def require_same_scheme(a: Signature, b: Signature) -> None:
    """Raise ``SchemeMismatchError`` unless both signatures come from the same scheme."""
    if a.scheme_id != b.scheme_id:
        raise SchemeMismatchError(
            f"cannot compare signatures of different schemes: {a.scheme_id} vs {b.scheme_id}"
        )
