"""Where the text of a trace comes from: a regular file, plain or compressed
(.xz, .gz, .bz2, told by their magic bytes), in chunks of bounded size.

The decompressors are driven here rather than through ``gzip.open`` and
friends, whose readers stop without a word at data after a complete stream
that is not another stream (``bz2`` and ``lzma`` "ignore" it), and which give
no offsets. Here every damaged input is an exception that says where:

* :class:`TruncatedData` — the file ends before the stream's end marker
  (the text read so far is good; the rest is lost);
* :class:`CorruptData` — the decompressor refuses the data (a bad block, a
  checksum that does not match), or data follows the last stream that is not
  another stream of the same kind.

Concatenated streams (``cat a.gz b.gz``, pbzip2, ``xz`` with several
streams) and zero padding after gzip members and xz streams are read as the
tools read them. A file that is not a regular file (a FIFO, a device, a
socket) or tracefs' ``trace_pipe`` is refused: it need not ever end.
"""
from __future__ import annotations

import bz2
import lzma
import os
import stat
import zlib

__all__ = ["TruncatedData", "CorruptData", "NotAFile", "open_text"]

CHUNK_BYTES = 4 << 20  # text handed to the parser at a time, at most
_IN_BYTES = 1 << 20    # compressed bytes read at a time
_TRACE_DAT_MAGIC = b"\x17\x08\x44tracing"


class _Inflate:
    """zlib's decompressor for one gzip member, with the interface of bz2's and lzma's."""

    def __init__(self):
        self._d = zlib.decompressobj(wbits=31)
        self.needs_input = True

    def decompress(self, data: bytes, max_length: int) -> bytes:
        out = self._d.decompress(self._d.unconsumed_tail + data, max_length)
        self.needs_input = not self._d.unconsumed_tail and len(out) < max_length
        return out

    @property
    def eof(self) -> bool:
        return self._d.eof

    @property
    def unused_data(self) -> bytes:
        return self._d.unused_data


# kind -> (magic, a new decompressor for one stream, zero padding allowed between streams)
KINDS = {
    "xz": (b"\xfd7zXZ\x00", lambda: lzma.LZMADecompressor(format=lzma.FORMAT_XZ), True),
    "gzip": (b"\x1f\x8b", _Inflate, True),
    "bzip2": (b"BZh", bz2.BZ2Decompressor, False),
}
_SUFFIXES = {".xz": "xz", ".gz": "gzip", ".bz2": "bzip2"}


class DamagedData(ValueError):
    """Compressed data that cannot be read to its end."""

    def __init__(self, kind: str, file_offset: int, text_bytes: int, reason: str):
        super().__init__(reason)
        self.kind, self.file_offset, self.text_bytes, self.reason = kind, file_offset, text_bytes, reason


class TruncatedData(DamagedData):
    """The compressed file ends inside a stream."""


class CorruptData(DamagedData):
    """The compressed data is damaged, or followed by something else."""


class NotAFile(ValueError):
    """A path that is not a trace file: a FIFO, a device, trace_pipe (they
    need not end), or a binary trace.dat."""


def kind_of(name: str, head: bytes) -> str:
    """"plain" or the compression named in KINDS, by the magic bytes; raises
    CorruptData when the name promises a compression that the bytes do not
    have (a file cut before its magic, say)."""
    for kind, (magic, _new, _pad) in KINDS.items():
        if head.startswith(magic):
            return kind
    promised = _SUFFIXES.get(os.path.splitext(name)[1].lower())
    if promised:
        what = "empty" if not head else "not " + promised + " data (no magic bytes)"
        raise CorruptData(promised, 0, 0, f"the name says {promised} but the file is {what}: truncated?")
    return "plain"


def open_text(name: str, chunk_bytes: int = CHUNK_BYTES):
    """(chunks, kind): an iterator over the file's text in chunks of at most
    chunk_bytes, and "plain" or the compression."""
    st = os.stat(name)  # FileNotFoundError names the path
    if not stat.S_ISREG(st.st_mode):
        what = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a character device" if stat.S_ISCHR(st.st_mode) else "a block device"
                if stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise NotAFile(f"{what}, not a trace file; a pipe or a device need not ever end: save the "
                       "trace to a file first (e.g. `cat /sys/kernel/tracing/trace > trace.txt`)")
    if os.path.basename(name) == "trace_pipe":
        raise NotAFile("trace_pipe waits for new events and never ends; read the `trace` file, or "
                       "save what trace_pipe gives to a file first")
    f = open(name, "rb")
    try:
        head = f.read(16)
        if head.startswith(_TRACE_DAT_MAGIC):
            raise NotAFile("a binary trace-cmd trace.dat, not text: tl.read_ftrace(path) reads it")
        kind = kind_of(name, head)
        f.seek(0)
    except BaseException:
        f.close()
        raise
    return (_plain(f, chunk_bytes) if kind == "plain" else _decompressed(f, kind, chunk_bytes)), kind


def _plain(f, chunk_bytes: int):
    with f:
        while chunk := f.read(chunk_bytes):
            yield chunk


def _decompressed(f, kind: str, chunk_bytes: int):
    """The text of the (possibly concatenated) streams of one kind in f."""
    magic, new, padded = KINDS[kind]
    with f:
        d = new()
        pending = b""       # compressed bytes read but not yet handed to a decompressor
        offset = 0          # file offset of the end of what was read
        text = 0            # text bytes produced
        file_done = False
        while True:
            if d is None:  # between streams: padding, another stream, or the end
                if padded:
                    pending = pending.lstrip(b"\0")
                if len(pending) < len(magic) and not file_done:
                    more = f.read(_IN_BYTES)
                    offset += len(more)
                    file_done = not more
                    pending += more
                    continue
                if not pending:
                    return
                if not pending.startswith(magic):
                    raise CorruptData(kind, offset - len(pending), text,
                                      f"{len(pending) if file_done else 'more than ' + str(len(pending))} bytes "
                                      f"after the end of the {kind} data that are not {kind} data")
                d = new()
            if not pending and d.needs_input:
                if file_done:
                    # Whatever the decompressor still holds, then the verdict.
                    while out := _run(d, b"", chunk_bytes, kind, offset, text):
                        text += len(out)
                        yield out
                    if not d.eof:
                        raise TruncatedData(kind, offset, text, f"the {kind} data ends before its end-of-stream "
                                                                f"marker (the file was cut short at byte {offset})")
                else:
                    pending = f.read(_IN_BYTES)
                    offset += len(pending)
                    file_done = not pending
                    continue
            out = _run(d, pending, chunk_bytes, kind, offset, text)
            pending = b""
            if out:
                text += len(out)
                yield out
            if d.eof:
                pending = d.unused_data
                d = None


def _run(d, data: bytes, chunk_bytes: int, kind: str, offset: int, text: int) -> bytes:
    try:
        return d.decompress(data, chunk_bytes)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as e:
        raise CorruptData(kind, offset, text, f"corrupt {kind} data near byte {offset} of the file ({e})") from e
