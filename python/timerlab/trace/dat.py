"""Reading trace-cmd's binary trace.dat (file formats 6 and 7).

``read_ftrace`` hands a file here when its content (after .xz/.gz/.bz2, if
any) starts with trace.dat's magic. The C++ reader (``timerlab._core.TraceDat``,
see cpp/include/timerlab/tracedat.hpp) walks the file: header, event formats,
saved cmdlines, kallsyms, options, the per-CPU ring-buffer pages of the chosen
buffer (instance). Each record is decoded by its own format into the text
reader's columns: the fields of the events the reader's schema knows go
straight into their columns, any other payload is printed as
``trace-cmd report`` prints it and parsed as its text, so a trace.dat and its
report text give the same ``Trace`` (cpp/src/tracedat_decode.hpp says how
the direct decoding keeps to what printing and parsing would give). Compressed v7 sections come back
here to be decompressed with the ``zstandard`` package or ``zlib``.

The ``line`` column holds the record's 1-based number in time order (the line
it has in ``trace-cmd report``'s output, less the header line).

One difference from the text, on purpose: trace-cmd (libtraceevent 1.7)
prints ``flags=D|P|I`` on every timer_start, misreading the print fmt's
``flags & (M|D|P|I)``; here the print fmt is evaluated as the kernel wrote
it, so a trace.dat has the timers' real flags (``Trace.features.timer_flags``
is "traced" where the report text gives "unreliable").

A plain trace.dat is mapped, not read; a compressed one (.dat.xz) is
decompressed into memory first.
"""
from __future__ import annotations

import mmap
import os
import zlib

from .. import _core
from .source import KINDS, CorruptData, NotAFile, TruncatedData, kind_of, open_text

MAGIC = b"\x17\x08\x44tracing"


def is_trace_dat(name: str) -> bool:
    """Whether the file's content (decompressed, if it is .xz/.gz/.bz2) starts
    with trace.dat's magic."""
    with open(name, "rb") as f:
        head = f.read(16)
    if head.startswith(MAGIC):
        return True
    try:
        kind = kind_of(name, head)
    except CorruptData:
        return False
    if kind == "plain":
        return False
    _magic, new, _pad = KINDS[kind]
    with open(name, "rb") as f:
        try:
            return new().decompress(f.read(1 << 16), len(MAGIC)).startswith(MAGIC)
        except Exception:  # damaged: the text path reports it with its offset
            return False


def _decompressor(algorithm: str):
    """(bytes, size) -> bytes for the file's compression algorithm."""
    if algorithm == "zstd":
        import zstandard

        def zstd(data, size):
            return zstandard.ZstdDecompressor().decompress(bytes(data), max_output_size=max(int(size), 1))
        return zstd
    if algorithm == "zlib":
        def inflate(data, size):
            d = zlib.decompressobj()
            out = d.decompress(bytes(data), max(int(size), 1))
            if d.unconsumed_tail or not d.eof:
                raise ValueError("zlib data longer than promised, or cut short")
            return out
        return inflate
    return None


def _algorithm(data) -> str:
    """The v7 header's compression name ("none" for v6)."""
    head = bytes(data[:128])
    version_end = head.find(b"\0", 10)
    if head[10:version_end] != b"7":
        return "none"
    name_at = version_end + 1 + 2 + 4
    return head[name_at:head.find(b"\0", name_at)].decode("ascii", "replace")


def _contents(name: str):
    """The file's bytes: an mmap for a plain file, the decompressed bytes otherwise."""
    with open(name, "rb") as f:
        head = f.read(16)
        if head.startswith(MAGIC):
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    chunks, _kind = open_text(name)
    return b"".join(chunks)


def read_dat(name: str, *, buffer: str = "", strict: bool = True, each=None, rows: int = 0):
    """(FtraceParser with the records, the TraceDat): see read_ftrace.
    ``each(parser)``, if given, is called whenever the parser holds ``rows``
    rows or more (it may take() them: a store's row groups).

    Raises TraceDatError-derived messages as ``(section, offset, reason)``
    through :class:`DatError`."""
    try:
        data = _contents(name)
    except (TruncatedData, CorruptData) as e:
        raise DatError("compressed file", e.file_offset, f"{e.kind} data: {e.reason}") from e
    except NotAFile as e:
        raise DatError("file", 0, str(e)) from e
    algorithm = _algorithm(data)
    decompress = _decompressor(algorithm)
    if algorithm not in ("none", "zstd", "zlib"):
        raise DatError("file header", 10, f"sections compressed with {algorithm!r}: zstd and zlib are read")
    try:
        dat = _core.TraceDat(data, decompress)
        names = [b[0] for b in dat.buffers]
        if buffer not in names:
            raise ValueError(f"buffer={buffer!r} is not in {name}; its buffers: {names}")
        parser = _core.FtraceParser(strict=strict)
        dat.read(buffer, parser, each=None if each is None else (lambda: each(parser)), rows=rows)
    except _core.TraceDatError as e:
        raise DatError(e.section, e.offset, str(e)) from e
    parser.finish()
    return parser, dat


def buffers(path) -> list[str]:
    """Names of the buffers (instances) of a trace.dat; "" is the top one."""
    data = _contents(os.fspath(path))
    try:
        return [b[0] for b in _core.TraceDat(data, _decompressor(_algorithm(data))).buffers]
    except _core.TraceDatError as e:
        raise DatError(e.section, e.offset, str(e)) from e


class DatError(ValueError):
    """A trace.dat that cannot be read: where (section, file offset) and why."""

    def __init__(self, section: str, offset: int, reason: str):
        super().__init__(f"{section} at byte {offset}: {reason}")
        self.section, self.offset, self.reason = section, offset, reason
