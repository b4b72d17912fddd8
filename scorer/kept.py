"""The form a server keeps an upload in: its exact bytes (sha256 equal), coded against the
public target ids, so that a verdict and its report are rebuilt from it by reading the very
file that was judged.

A file is cut into runs, alternately of separator bytes (`SEPARATORS`) and of the others,
which cover it exactly. Each run becomes a code: the index of an id of the `Reference` (the
competition's public targets file, which every submission repeats, and whose random ids no
generic compressor can shrink), or else of the file's own vocabulary (its items, separators
and anything else). What is kept, per block of the file, compressed with zstd:

- which runs are reference ids (a bit a run);
- the differences between consecutive reference codes (mostly 1 in the targets' order);
- the other codes, as byte planes (low byte first);
- the vocabulary entries new in the block (their bytes, and their lengths).

A header names the format, the reference's sha256 and the original's sha256 and size; the
decoder puts every run back in order and checks the sha256 of what it made. Blocks bound the
memory of both sides (`BLOCK`): a few times a block, whatever the file."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

#: The bytes that separate fields, rows and list items in every format a submission has.
SEPARATORS = b", \t\n\r;"

#: The first bytes of a kept form, and its format's version.
MAGIC, VERSION = b"scorer-kept\x00", 1

#: The original bytes coded at a time. The codec's memory is about 40 bytes a run of the
#: block, whatever the file's size: 8 MiB of one-byte runs (the worst) take about 300 MiB,
#: an H&M-shaped block (7 bytes a run) about 50 MiB; a larger block gains little (bench/KEPT.md:
#: 12.9 % of H&M's bytes at 8 MiB, 12.8 % at 16 MiB).
BLOCK = 8 << 20

#: zstd's level for every stream: 9 is where the H&M-sized file stops gaining (bench/KEPT.md).
LEVEL = 9

#: The most own-vocabulary entries a new block is compared with: past it, a block repeats
#: the entries it uses (still exact, only larger), so that a file of all-distinct tokens
#: costs linear time, not a lookup table rebuilt ever larger for each block.
SHARED_VOCABULARY = 1 << 22

#: A kept form is kept only when it takes at most this share of the bytes' room: else the
#: bytes are kept as received.
WORTH = 0.9

#: The first bytes of formats compressed already (Parquet, zip, gzip, zstd, bzip2, xz):
#: kept as received, not packed, since their runs are noise.
COMPRESSED = (b"PAR1", b"PK\x03\x04", b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"BZh", b"\xfd7zXZ")

_IS_SEPARATOR = np.zeros(256, dtype=bool)
_IS_SEPARATOR[list(SEPARATORS)] = True

#: The header: magic, version, the reference's and the original's sha256, size, blocks.
_HEADER = struct.Struct(f"<{len(MAGIC)}sB32s32sQI")
#: A block's: its original bytes, its runs; then `_STREAMS` streams, each (raw, packed) sizes.
_BLOCK = struct.Struct("<QQ")
_STREAM = struct.Struct("<QQ")
_STREAMS = 5


class KeptError(ValueError):
    """Bytes that are not a kept form made against this reference, or that do not give
    back the bytes their header names."""


class Lookup:
    """Where each of some byte strings is in `ids` (its first place), by a 64-bit hash of
    each, sorted once, then a check of the bytes: built once, asked once a block, unlike a
    set lookup that hashes its whole set again at every call."""

    def __init__(self, ids: pa.LargeBinaryArray) -> None:
        self.ids = ids
        hashes = _hashes(ids)
        self.order = np.argsort(hashes, kind="stable")
        self.sorted = hashes[self.order]

    def __len__(self) -> int:
        return len(self.ids)

    def find(self, values: pa.LargeBinaryArray) -> np.ndarray:
        """The index in `ids` of each of `values` (int64), -1 where it is not there. Two
        ids of one hash: the other is not found, and its runs are coded as the file's own."""
        found = np.full(len(values), -1, dtype=np.int64)
        if not len(self.ids) or not len(values):
            return found
        hashes = _hashes(values)
        asked = np.argsort(hashes)  # in order, the sorted hashes are read from end to end
        at = np.empty(len(hashes), dtype=np.int64)
        at[asked] = np.searchsorted(self.sorted, hashes[asked])
        np.minimum(at, len(self.sorted) - 1, out=at)
        maybe = np.flatnonzero(self.sorted[at] == hashes)
        where = self.order[at[maybe]]
        same = pc.equal(values.take(maybe), self.ids.take(where)).to_numpy(zero_copy_only=False)
        found[maybe[same]] = where[same]
        return found


def _hashes(values: pa.LargeBinaryArray) -> np.ndarray:
    return pl.Series(values).hash(seed=0).to_numpy()


@dataclass(frozen=True)
class Reference:
    """The ids runs are coded against: the runs of a public file (a server's targets) that
    are not separators, in its order, and the sha256 of that file's bytes, which a kept
    form names so that it is decoded against the same file."""

    sha256: str
    ids: pa.LargeBinaryArray
    lookup: Lookup

    @classmethod
    def of(cls, data: bytes) -> Reference:
        runs = _runs(data)
        words = runs.filter(pa.array(~_IS_SEPARATOR[_first_bytes(data, runs)]))
        return cls(hashlib.sha256(data).hexdigest(), words, Lookup(words))


def pack(data: bytes | memoryview, reference: Reference, *, block: int = BLOCK) -> bytes:
    """The kept form of `data` against `reference` (`unpack` gives `data` back)."""
    if block < 1:
        raise ValueError(f"block: expected a positive size, got {block}")
    view = memoryview(data).cast("B")
    coder = _Coder(reference)
    parts = [coder.block(view[start:end]) for start, end in _blocks(view, block)]
    head = _HEADER.pack(
        MAGIC,
        VERSION,
        bytes.fromhex(reference.sha256),
        hashlib.sha256(view).digest(),
        len(view),
        len(parts),
    )
    return b"".join([head, *parts])


def smaller(data: bytes | memoryview, reference: Reference, sha256: str) -> bytes | None:
    """The kept form of `data`, checked to give back the very bytes of this `sha256`, when it
    takes at most `WORTH` of their room; None when they are better kept as they are: a
    compressed format, bytes the codes do not shrink, or bytes that are not those of
    `sha256`. One kept form and the bytes as received are two ways to read an upload, not
    three: zstd alone gains little on a compressed file, and a text file that this codec
    does not shrink is no submission's."""
    view = memoryview(data).cast("B")
    if bytes(view[:8]).startswith(COMPRESSED) or hashlib.sha256(view).hexdigest() != sha256:
        return None
    blob = pack(view, reference)
    if len(blob) > WORTH * len(view):
        return None
    try:
        for _ in unpacked(blob, reference):  # checks the sha256 of the bytes it makes
            pass
    except KeptError:
        return None
    return blob


def unpack(blob: bytes | memoryview, reference: Reference) -> bytes:
    """The bytes `blob` was packed from (`KeptError` if it cannot give them back)."""
    return b"".join(unpacked(blob, reference))


def unpacked(blob: bytes | memoryview, reference: Reference) -> Iterator[bytes]:
    """The bytes `blob` was packed from, a block at a time, checked at the end against the
    sha256 the header names: a `KeptError` then, or at the first thing that does not fit."""
    view = memoryview(blob).cast("B")
    if len(view) < _HEADER.size or bytes(view[: len(MAGIC)]) != MAGIC:
        raise KeptError("not a kept form (no header)")
    _, version, ref_sha, sha, size, count = _HEADER.unpack_from(view)
    if version != VERSION:
        raise KeptError(f"a kept form of version {version}; this scorer reads {VERSION}")
    if ref_sha.hex() != reference.sha256:
        raise KeptError(f"packed against the reference {ref_sha.hex()}, not this one")
    blocks = list(_read_blocks(view, _HEADER.size, count, size))
    if sum(b.size for b in blocks) != size:
        raise KeptError("the blocks do not add up to the size the header names")
    vocabulary = pa.concat_arrays([reference.ids, *(b.vocabulary() for b in blocks)])
    hashed = hashlib.sha256()
    for found in blocks:
        piece = found.decode(vocabulary, len(reference.ids))
        hashed.update(piece)
        yield piece
    if hashed.digest() != sha:
        raise KeptError("the bytes made are not those the header names (sha256 differs)")


def is_kept(blob: bytes | memoryview) -> bool:
    """Whether `blob` starts as a kept form does (the caller knows which files are)."""
    return bytes(memoryview(blob)[: len(MAGIC)]) == MAGIC


# packing


def _blocks(view: memoryview, most: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each block: at most `most` bytes, ending after its last line end
    when it has one, so that a row's runs stay in one block."""
    start = 0
    while start < len(view):
        end = min(start + most, len(view))
        if end < len(view):
            cut = bytes(view[start:end]).rfind(b"\n")
            end = start + cut + 1 if cut >= 0 else end
        yield start, end
        start = end


def _runs(data: bytes | memoryview) -> pa.LargeBinaryArray:
    """The runs of `data`, alternately separators and not, over its own buffer (no copy)."""
    codes = np.frombuffer(data, dtype=np.uint8)
    if not len(codes):
        return pa.array([], pa.large_binary())
    separator = _IS_SEPARATOR[codes]
    cuts = np.flatnonzero(separator[1:] != separator[:-1]) + 1
    offsets = np.empty(len(cuts) + 2, dtype=np.int64)
    offsets[0], offsets[1:-1], offsets[-1] = 0, cuts, len(codes)
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(offsets) - 1, buffers)


def _first_bytes(data: bytes | memoryview, runs: pa.LargeBinaryArray) -> np.ndarray:
    """The first byte of each run."""
    offsets = np.frombuffer(runs.buffers()[1], dtype=np.int64)[: len(runs)]
    return np.frombuffer(data, dtype=np.uint8)[offsets]


def _values(array: pa.LargeBinaryArray) -> bytes:
    """The bytes of an array's values, end to end."""
    if not len(array):
        return b""
    spans = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset :]
    start, end = int(spans[0]), int(spans[len(array)])
    piece: bytes = array.buffers()[2].slice(start, end - start).to_pybytes()
    return piece


def _squeeze(raw: bytes | np.ndarray) -> bytes:
    """A stream as kept: its raw and packed sizes, then its bytes packed with zstd."""
    body = raw.tobytes() if isinstance(raw, np.ndarray) else raw
    packed: bytes = pa.Codec("zstd", compression_level=LEVEL).compress(body, asbytes=True)
    return _STREAM.pack(len(body), len(packed)) + packed


class _Coder:
    """The codes of one file's blocks in turn: the reference first, then the file's own
    vocabulary as the blocks bring its entries."""

    def __init__(self, reference: Reference) -> None:
        self.reference = reference
        self.own = Lookup(pa.array([], pa.large_binary()))  # the entries later blocks share
        self.count = 0  # every own entry so far, shared or repeated

    def block(self, data: memoryview) -> bytes:
        runs = _runs(data)
        encoded = pc.dictionary_encode(runs)
        index = encoded.indices.to_numpy()
        distinct = encoded.dictionary
        ref_code = self.reference.lookup.find(distinct)
        own_code = self.own.find(distinct)
        fresh = (ref_code < 0) & (own_code < 0)
        new = distinct.filter(pa.array(fresh))
        own_code[fresh] = self.count + np.arange(len(new))
        # `own` stays the first entries of the file's vocabulary, so its indices are codes
        if len(self.own) == self.count and self.count + len(new) <= SHARED_VOCABULARY:
            self.own = Lookup(pa.concat_arrays([self.own.ids, new]))
        self.count += len(new)
        is_ref = ref_code[index] >= 0
        ref_codes = ref_code[index[is_ref]]
        own_codes = own_code[index[~is_ref]].astype("<u4")
        lengths = pc.binary_length(new).to_numpy(zero_copy_only=False).astype("<u4")
        body = _values(new)
        streams = [
            np.packbits(is_ref),
            np.diff(ref_codes, prepend=0).astype("<i4"),
            own_codes.view(np.uint8).reshape(-1, 4).T.copy(),  # byte planes, low byte first
            body,
            lengths,
        ]
        return _BLOCK.pack(len(data), len(runs)) + b"".join(map(_squeeze, streams))


# unpacking


@dataclass(frozen=True)
class _Block:
    """One block of a kept form, its streams still packed."""

    size: int
    runs: int
    streams: tuple[tuple[int, memoryview], ...]

    def stream(self, n: int, most: int) -> bytes:
        raw, packed = self.streams[n]
        if raw > most:
            raise KeptError(f"a stream of {raw:,} bytes where {most:,} at most fit")
        if raw == 0:
            return b""
        try:
            found: bytes = pa.Codec("zstd").decompress(packed, raw, asbytes=True)
            return found
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise KeptError(f"a stream does not decompress: {exc}") from None

    def vocabulary(self) -> pa.LargeBinaryArray:
        """The own-vocabulary entries this block brought."""
        lengths = np.frombuffer(self.stream(4, 4 * self.size), dtype="<u4").astype(np.int64)
        body = self.stream(3, self.size)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if offsets[-1] != len(body):
            raise KeptError("the vocabulary's lengths do not add up to its bytes")
        buffers = [None, pa.py_buffer(offsets), pa.py_buffer(body)]
        return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(lengths), buffers)

    def decode(self, vocabulary: pa.LargeBinaryArray, references: int) -> bytes:
        """The block's original bytes, its runs taken from `vocabulary` (the reference's
        `references` ids first)."""
        if self.runs == 0:
            return b""
        bits = np.frombuffer(self.stream(0, (self.runs + 7) // 8), dtype=np.uint8)
        if len(bits) * 8 < self.runs:
            raise KeptError("fewer run bits than runs")
        is_ref = np.unpackbits(bits, count=self.runs).astype(bool)
        ref_count = int(is_ref.sum())
        deltas = np.frombuffer(self.stream(1, 4 * ref_count), dtype="<i4")
        planes = np.frombuffer(self.stream(2, 4 * (self.runs - ref_count)), dtype=np.uint8)
        if len(deltas) != ref_count or len(planes) != 4 * (self.runs - ref_count):
            raise KeptError("the codes do not match the runs")
        codes = np.empty(self.runs, dtype=np.int64)
        codes[is_ref] = np.cumsum(deltas, dtype=np.int64)
        own = planes.reshape(4, -1).T.copy().view("<u4").ravel()
        codes[~is_ref] = references + own.astype(np.int64)
        if (codes[is_ref] < 0).any() or (codes[is_ref] >= references).any():
            raise KeptError("a reference code out of range")
        if len(codes) and codes.max() >= len(vocabulary):
            raise KeptError("a code past the vocabulary")
        piece = _values(vocabulary.take(pa.array(codes)))
        if len(piece) != self.size:
            raise KeptError("a block's runs do not add up to its size")
        return piece


def _read_blocks(view: memoryview, at: int, count: int, size: int) -> Iterator[_Block]:
    """The blocks of a kept form from `at`, checked to fit in it and in `size` bytes."""
    for _ in range(count):
        if at + _BLOCK.size > len(view):
            raise KeptError("the kept form ends inside a block's header")
        block_size, runs = _BLOCK.unpack_from(view, at)
        at += _BLOCK.size
        if block_size > size or runs > block_size:
            raise KeptError("a block larger than the file")
        streams = []
        for _ in range(_STREAMS):
            if at + _STREAM.size > len(view):
                raise KeptError("the kept form ends inside a stream's header")
            raw, packed = _STREAM.unpack_from(view, at)
            at += _STREAM.size
            if at + packed > len(view):
                raise KeptError("the kept form ends inside a stream")
            streams.append((raw, view[at : at + packed]))
            at += packed
        yield _Block(block_size, runs, tuple(streams))
    if at != len(view):
        raise KeptError("bytes past the last block")
