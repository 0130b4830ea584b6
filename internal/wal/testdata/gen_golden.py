#!/usr/bin/env python3
"""Independent reference writer for the golden WAL files in this directory.

It implements LevelDB's log writer (db/log_writer.cc) and CRC-32C from their
definitions, sharing no code with package wal, so the Go Writer reproducing
these files byte for byte checks the format rather than the Writer against
itself. Run it from this directory (python3 gen_golden.py) after changing a
*.txt spec; it rewrites NAME.log for each NAME.txt that has record lines and
checks the chunk lines the spec lists.

Spec lines (the Go tests parse the same grammar):
  record empty                 a zero-length record
  record str <text>            the text after "str " to the end of the line
  record pat <n> <seed>        n bytes, byte i = (31*i + seed) mod 256
  record fill <n> <byte>       n copies of one byte (decimal or 0x hex)
  chunk <offset> <type> <len>  a chunk the file must contain, in order
Other lines (expect, comments) are for the Go tests.
"""
import glob
import struct

BLOCK = 32768
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
TYPES = {"full": FULL, "first": FIRST, "middle": MIDDLE, "last": LAST}


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def crc32c_fast(data):
    # Table-driven, for speed on ~200 KiB; checked against crc32c() below.
    crc = 0xFFFFFFFF
    for b in data:
        crc = TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


TABLE = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    TABLE.append(c)
assert crc32c(b"123456789") == crc32c_fast(b"123456789") == 0xE3069283


def mask(c):
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def payload(args):
    kind = args[0]
    if kind == "empty":
        return b""
    if kind == "str":
        return args[1].encode()
    if kind == "pat":
        n, seed = int(args[1]), int(args[2])
        return bytes((31 * i + seed) % 256 for i in range(n))
    if kind == "fill":
        return bytes([int(args[2], 0)]) * int(args[1])
    raise ValueError("unknown record kind " + kind)


def write_log(records):
    out = bytearray()
    chunks = []
    for rec in records:
        left, begin = rec, True
        while True:
            leftover = BLOCK - len(out) % BLOCK
            if leftover < HEADER:
                out += b"\0" * leftover
                leftover = BLOCK
            n = min(len(left), leftover - HEADER)
            end = n == len(left)
            typ = FULL if begin and end else FIRST if begin else LAST if end else MIDDLE
            frag = left[:n]
            chunks.append((len(out), typ, n))
            out += struct.pack("<IHB", mask(crc32c_fast(bytes([typ]) + frag)), n, typ) + frag
            left, begin = left[n:], False
            if end:
                break
    return bytes(out), chunks


def main():
    for spec in sorted(glob.glob("*.txt")):
        records, want_chunks = [], []
        for line in open(spec):
            line = line.rstrip("\n")
            if line.startswith("record "):
                rest = line[len("record "):]
                records.append(payload(rest.split(" ", 1) if rest.startswith("str ") else rest.split()))
            elif line.startswith("chunk "):
                _, off, typ, n = line.split()
                want_chunks.append((int(off), TYPES[typ], int(n)))
        if not records:
            continue
        data, chunks = write_log(records)
        if want_chunks and want_chunks != chunks:
            raise SystemExit("%s: chunk layout differs:\n want %s\n got  %s" % (spec, want_chunks, chunks))
        name = spec[:-len(".txt")] + ".log"
        with open(name, "wb") as f:
            f.write(data)
        print("%s: %d records, %d chunks, %d bytes" % (name, len(records), len(chunks), len(data)))


if __name__ == "__main__":
    main()
