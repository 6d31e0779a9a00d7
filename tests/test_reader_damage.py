"""The reader never guesses (issue 17): damage that still parses, truncated
compressed streams of every kind, CR-only text, a CPU beyond the header's
count, endless input. Each is an error naming the file and the line (or the
byte), or with strict=False a counted skip with a warning."""
import bz2
import gzip
import lzma
import os
import warnings

import pytest

import timerlab as tl
from conftest import TRACE_DIR

BOOT = TRACE_DIR / "qemu-6.12.95-16cpu-2node-idle.boot.txt.xz"
COMPRESS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.fixture(scope="module")
def boot_text() -> bytes:
    return lzma.decompress(BOOT.read_bytes())


@pytest.fixture(scope="module")
def boot_rows() -> int:
    return len(tl.read_ftrace(BOOT).events)


def lenient(path):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        trace = tl.read_ftrace(path, strict=False)
    return trace, [str(x.message) for x in w]


def test_a_last_line_cut_mid_number_is_not_an_event(tmp_path):
    """The issue's file: what is left of the last line still parses, as
    expires=42949; only the missing newline tells."""
    head = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:2\n"
    line = "  <idle>-0 [001] d.s2. 70.123456: timer_start: timer=00000000ac41a5ce function=process_timeout expires=42949"
    path = tmp_path / "cut.txt"
    path.write_text(head + line + "37296 [timeout=4] cpu=1 idx=64 flags=\n" + line)
    with pytest.raises(tl.TraceFormatError, match=r"cut.txt:5: partial last line"):
        tl.read_ftrace(path)
    trace, warned = lenient(path)
    assert len(trace.events) == 1 and trace.events["expires_jiffies"].tolist() == [4294937296]
    assert trace.skipped_lines == 1 and trace.skipped_examples[0].startswith("line 5: partial last line")
    assert warned and "skipped 1 malformed" in warned[0]


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_truncated_compressed_streams(tmp_path, boot_text, boot_rows, kind):
    """Cut anywhere (in the header, mid-stream, in the trailer): strict names the
    file and the line where the text stops; lenient keeps the rows before the
    cut, all of them intact, and counts the loss."""
    data = COMPRESS[kind](boot_text)
    reference = tl.read_ftrace(BOOT).events
    for cut in (1, len(data) // 3, len(data) - 9, len(data) - 1):
        path = tmp_path / f"cut{cut}.txt.{kind}"
        path.write_bytes(data[:cut])
        with pytest.raises(tl.TraceFormatError, match=rf"cut{cut}\.txt\.{kind}:\d*:? .*(truncated|not)"):
            tl.read_ftrace(path)
        if cut == 1:
            continue  # not even the magic bytes: nothing to keep
        trace, warned = lenient(path)
        assert trace.skipped_lines >= 1 and warned, cut
        assert any("truncated" in e for e in trace.skipped_examples)
        n = len(trace.events)
        assert n <= boot_rows  # a cut in the trailer loses no text, but its check
        for col in ("ts_ns", "cpu", "event", "line"):
            assert trace.events[col].tolist() == reference[col].iloc[:n].tolist(), (cut, col)


def test_concatenated_streams_are_read_and_trailing_garbage_is_not(tmp_path, boot_text, boot_rows):
    half = boot_text.index(b"\n", len(boot_text) // 2) + 1
    for kind, comp in COMPRESS.items():
        path = tmp_path / f"two.txt.{kind}"
        path.write_bytes(comp(boot_text[:half]) + comp(boot_text[half:]))
        assert len(tl.read_ftrace(path).events) == boot_rows, kind
        path.write_bytes(comp(boot_text) + b"garbage after the stream")
        with pytest.raises(tl.TraceFormatError, match=rf"bytes after the end of the .* data"):
            tl.read_ftrace(path)


def test_empty_file_named_compressed(tmp_path):
    path = tmp_path / "trace.txt.gz"
    path.write_bytes(b"")
    with pytest.raises(tl.TraceFormatError, match="the name says gzip but the file is empty"):
        tl.read_ftrace(path)


def test_cr_only_line_endings_are_refused_clearly(tmp_path, boot_text):
    path = tmp_path / "mac.txt"
    path.write_bytes(boot_text[:20000].replace(b"\n", b"\r") + b"\n")
    with pytest.raises(tl.TraceFormatError, match=r"mac.txt:1: .*CR-only line endings"):
        tl.read_ftrace(path)
    crlf = tmp_path / "dos.txt"
    crlf.write_bytes(boot_text.replace(b"\n", b"\r\n"))
    assert len(tl.read_ftrace(crlf).events) == len(tl.read_ftrace(BOOT).events)


def test_a_cpu_beyond_the_headers_count(tmp_path):
    path = tmp_path / "p.txt"
    path.write_text("# entries-in-buffer/entries-written: 2/2   #P:2\n"
                    "  x-1 [001] d..2. 1.000000: timer_init: timer=1\n"
                    "  x-1 [002] d..2. 1.000001: timer_init: timer=2\n")
    with pytest.raises(tl.TraceFormatError, match=r"p.txt:3: CPU 2 is beyond the header's CPU count \(#P:2\)"):
        tl.read_ftrace(path)
    trace, _ = lenient(path)
    assert len(trace.events) == 1 and trace.skipped_lines == 1 and trace.nr_cpus == 2


def test_an_over_long_line(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"  x-1 [000] d..2. 1.000000: foo: " + b"a" * (2 << 20) + b"\n"
                     b"  x-1 [000] d..2. 1.000001: timer_init: timer=1\n")
    with pytest.raises(tl.TraceFormatError, match=r"long.txt:1: line longer than 1048576 bytes"):
        tl.read_ftrace(path)
    trace, _ = lenient(path)
    assert len(trace.events) == 1 and trace.skipped_lines == 1


def test_devices_and_fifos_are_refused(tmp_path):
    with pytest.raises(tl.TraceFormatError, match="/dev/zero: a character device, not a trace file"):
        tl.read_ftrace("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # nobody writes to it: opening it would block
    with pytest.raises(tl.TraceFormatError, match="fifo: a FIFO, not a trace file"):
        tl.read_ftrace(fifo)
    pipe = tmp_path / "trace_pipe"
    pipe.write_text("")
    with pytest.raises(tl.TraceFormatError, match="trace_pipe waits for new events"):
        tl.read_ftrace(pipe)
