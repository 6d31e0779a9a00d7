"""trace.dat files made of records of chosen event formats, for comparing
the decoder with trace-cmd report on formats no shared trace has records of
(tests/test_tracedat_formats.py), and the small v6 file of the fuzz
targets (targets.small_v6).

A real v6 trace.dat (little-endian, 8-byte longs) carries the format of
every event its kernel defines (the 6.18 files: 2 323), but records of
about twenty. `synthesize` keeps such a file's header, formats, kallsyms
and cmdlines, and replaces its CPU data with pages of records it makes:
for each chosen event, records whose fields hold values drawn from a
seeded generator, laid out as the format says (fixed fields at their
offsets, __data_loc / __rel_loc strings and arrays after them), framed as
the ring buffer frames them (trace-cmd.dat.v6(5), and
include/linux/ring_buffer.h for the record header).

The values are the kind a kernel writes: strings of letters and digits
(never a blank or a newline, which would cut trace-cmd's text), numbers of
every size and sign, kernel addresses some of which the file's kallsyms
names, small enum-like values as well as large ones.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

_FIELD = re.compile(r"\tfield:(?P<decl>[^;]*);\toffset:(?P<offset>\d+);\tsize:(?P<size>\d+);\tsigned:(?P<signed>\d+);")


@dataclass
class Field:
    decl: str  # e.g. "__data_loc char[] name", "unsigned long args[6]", "void * hrtimer"
    offset: int
    size: int
    signed: bool

    @property
    def name(self) -> str:
        return re.sub(r"\[.*$", "", self.decl.split()[-1])

    @property
    def dynamic(self) -> str | None:
        """"data_loc" or "rel_loc" for a dynamic field, else None."""
        head = self.decl.split()[0]
        return {"__data_loc": "data_loc", "__rel_loc": "rel_loc"}.get(head)

    @property
    def is_char(self) -> bool:
        return re.search(r"\bchar\b", self.decl) is not None and "*" not in self.decl

    @property
    def array(self) -> bool:
        return "[" in self.decl


@dataclass
class Format:
    system: str
    name: str
    id: int
    fields: list[Field]


def _u(data: bytes, n: int, at: int) -> int:
    return int.from_bytes(data[at:at + n], "little")


def layout(data: bytes) -> dict:
    """Where the sections of a v6 trace.dat are (trace-cmd.dat.v6(5)): the
    formats of each event system, the kallsyms text, the CPU count, the
    offset of the flyrecord CPU table and its (offset, size) per CPU; the
    page size."""
    p = data.index(b"\0", 10) + 1 + 2
    page = _u(data, 4, p)
    p += 4 + 12
    p += 8 + _u(data, 8, p) + 13
    p += 8 + _u(data, 8, p)
    formats = []
    count, p = _u(data, 4, p), p + 4
    for _ in range(count):  # ftrace's own events
        formats.append(("ftrace", data[p + 8:p + 8 + _u(data, 8, p)]))
        p += 8 + _u(data, 8, p)
    systems, p = _u(data, 4, p), p + 4
    for _ in range(systems):
        end = data.index(b"\0", p)
        system, p = data[p:end].decode(), end + 1
        count, p = _u(data, 4, p), p + 4
        for _ in range(count):
            formats.append((system, data[p + 8:p + 8 + _u(data, 8, p)]))
            p += 8 + _u(data, 8, p)
    kallsyms = data[p + 4:p + 4 + _u(data, 4, p)]
    p += 4 + _u(data, 4, p)
    p += 4 + _u(data, 4, p)  # printk formats
    p += 8 + _u(data, 8, p)  # saved cmdlines
    cpus, p = _u(data, 4, p), p + 4
    if data[p:p + 10] == b"options  \0":
        p += 10
        while _u(data, 2, p) != 0:
            p += 6 + _u(data, 4, p + 2)
        p += 2
    if data[p:p + 10] != b"flyrecord\0":
        raise ValueError("not a flyrecord v6 trace.dat")
    table = [(_u(data, 8, p + 10 + 16 * i), _u(data, 8, p + 18 + 16 * i)) for i in range(cpus)]
    return dict(page=page, formats=formats, kallsyms=kallsyms, cpus=cpus, table=p + 10, cpu_data=table)


def with_cpu_data(data: bytes, blobs: list[bytes]) -> bytes:
    """The v6 file `data` with these bytes as its CPUs' data (one blob per
    CPU of its header, each a whole number of pages), the CPU table
    rewritten; what follows the table is dropped."""
    lay = layout(data)
    if len(blobs) != lay["cpus"]:
        raise ValueError(f"{len(blobs)} CPU blobs for a file of {lay['cpus']} CPUs")
    page, p = lay["page"], lay["table"]
    start = -(-(p + 16 * len(blobs)) // page) * page
    out, at = bytearray(data[:p]), start
    for blob in blobs:
        out += at.to_bytes(8, "little") + len(blob).to_bytes(8, "little")
        at += len(blob)
    return bytes(out.ljust(start, b"\0") + b"".join(blobs))


def formats_of(data: bytes) -> list[Format]:
    out = []
    for system, text in layout(data)["formats"]:
        t = text.decode("utf-8", "replace")
        name = re.search(r"^name: (\S+)", t, re.M)
        ident = re.search(r"^ID: (\d+)", t, re.M)
        if not (name and ident):
            continue
        fields = [Field(m["decl"].strip(), int(m["offset"]), int(m["size"]), m["signed"] == "1")
                  for m in _FIELD.finditer(t)]
        out.append(Format(system, name.group(1), int(ident.group(1)), fields))
    return out


def symbol_addresses(data: bytes) -> list[int]:
    """The addresses the file's kallsyms names."""
    out = []
    for line in layout(data)["kallsyms"].split(b"\n"):
        parts = line.split()
        if len(parts) >= 3:
            try:
                out.append(int(parts[0], 16))
            except ValueError:
                pass
    return out


class Values:
    """Field values, drawn from one seeded generator."""

    def __init__(self, seed: int, symbols: list[int]):
        self.rng = random.Random(seed)
        self.symbols = symbols or [0xffffffff81000000]

    def word(self, n: int) -> bytes:
        letters = "abcdefghijklmnopqrstuvwxyz0123456789_"
        return "".join(self.rng.choice(letters) for _ in range(n)).encode()

    def number(self, size: int, signed: bool, decl: str) -> int:
        r = self.rng.random()
        bits = 8 * size
        if "*" in decl or (size == 8 and r < 0.15):  # an address: a symbol's, inside one, or any kernel one
            choice = self.rng.random()
            if choice < 0.4:
                v = self.rng.choice(self.symbols)
            elif choice < 0.7:
                v = self.rng.choice(self.symbols) + self.rng.randrange(1, 0x40)
            else:
                v = 0xffff888000000000 + self.rng.randrange(1 << 32) if choice < 0.9 else 0
        elif r < 0.45:
            v = self.rng.randrange(0, 16)  # small: enum values, flags, booleans, CPUs
        elif r < 0.6:
            v = 1 << self.rng.randrange(0, bits)
        elif r < 0.75 and signed:
            v = -self.rng.randrange(1, 1 << min(bits - 1, 20))
        else:
            v = self.rng.getrandbits(bits)
        return v & ((1 << bits) - 1)


def record(fmt: Format, values: Values, pid: int) -> bytes:
    """One record of `fmt`: its fixed part, then its dynamic fields' data."""
    end = max((f.offset + f.size for f in fmt.fields), default=8)
    fixed = bytearray(end)
    tail = bytearray()
    for f in fmt.fields:
        if f.name == "common_type":
            v = fmt.id.to_bytes(f.size, "little")
        elif f.name == "common_pid":
            v = pid.to_bytes(f.size, "little")
        elif f.name.startswith("common_"):
            v = bytes(f.size)
        elif f.dynamic:
            elem = _element_size(f.decl)
            if f.is_char:
                body = values.word(values.rng.randrange(0, 12)) + b"\0"
            else:
                body = b"".join(values.number(elem, False, f.decl).to_bytes(elem, "little")
                                for _ in range(values.rng.randrange(0, 5)))
            at = end + len(tail)
            rel = at - (f.offset + f.size) if f.dynamic == "rel_loc" else at
            v = ((len(body) << 16) | rel).to_bytes(4, "little")[:f.size]
            tail += body
        elif f.is_char and f.array:
            v = values.word(values.rng.randrange(0, f.size) if f.size else 0).ljust(f.size, b"\0")
        elif f.array:
            elem = _element_size(f.decl) or 1
            count = f.size // elem if elem <= f.size else 0
            v = b"".join(values.number(elem, f.signed, f.decl).to_bytes(elem, "little") for _ in range(count))
            v = v.ljust(f.size, b"\0")
        elif 1 <= f.size <= 8:
            v = values.number(f.size, f.signed, f.decl).to_bytes(f.size, "little")
        else:
            v = bytes(values.rng.getrandbits(8) for _ in range(f.size))
        fixed[f.offset:f.offset + f.size] = v
    body = bytes(fixed + tail)
    return body + bytes(-len(body) % 4)


def _element_size(decl: str) -> int:
    """The size of one element of an array field, from its C type."""
    t = decl.lower()
    if "*" in t or re.search(r"\b(long|u64|s64|__u64|__s64|unsigned long|dma_addr_t|size_t)\b", t):
        return 8
    if re.search(r"\b(int|u32|s32|__u32|__s32|__be32|__le32|unsigned)\b", t):
        return 4
    if re.search(r"\b(short|u16|s16|__u16|__be16|__le16)\b", t):
        return 2
    return 1


def pages(records: list[bytes], page: int, start_ns: int, step_ns: int = 1000) -> bytes:
    """The records framed into ring-buffer pages (8-byte time stamp, 8-byte
    commit), record i at start_ns + i * step_ns: a page's time stamp is its
    first record's, the records after it a delta of step_ns each."""
    out, cur, page_ts = bytearray(), bytearray(), None
    room = page - 16

    def flush():
        out.extend(page_ts.to_bytes(8, "little") + len(cur).to_bytes(8, "little") + bytes(cur).ljust(room, b"\0"))

    for i, body in enumerate(records):
        small = len(body) <= 28 * 4  # the length fits the header's type_len, in 4-byte words
        if (4 if small else 8) + len(body) > room:
            raise ValueError(f"a record of {len(body)} bytes does not fit a page")
        if cur and len(cur) + (4 if small else 8) + len(body) > room:
            flush()
            cur, page_ts = bytearray(), None
        delta = 0 if page_ts is None else step_ns
        if page_ts is None:
            page_ts = start_ns + i * step_ns
        if small:
            cur += ((delta << 5) | (len(body) // 4)).to_bytes(4, "little") + body
        else:
            cur += (delta << 5).to_bytes(4, "little") + (len(body) + 4).to_bytes(4, "little") + body
    if cur:
        flush()
    return bytes(out)


def synthesize(data: bytes, events: list[str], per_event: int = 3, seed: int = 1) -> bytes:
    """`data` (a v6 trace.dat) with its CPU data replaced: `per_event`
    records of each of `events` ("system:name") on CPU 0, in that order,
    the other CPUs empty."""
    by_name = {f"{f.system}:{f.name}": f for f in formats_of(data)}
    missing = [e for e in events if e not in by_name]
    if missing:
        raise KeyError(f"no format for {missing[:5]}")
    values = Values(seed, symbol_addresses(data))
    records = [record(by_name[e], values, pid=values.rng.choice((0, 1, 42, 1000)))
               for e in events for _ in range(per_event)]
    lay = layout(data)
    blobs = [pages(records, lay["page"], start_ns=1_000_000_000)] + [b""] * (lay["cpus"] - 1)
    return with_cpu_data(data, blobs)
