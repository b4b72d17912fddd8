"""The kept form of an upload (`scorer.kept`): the exact bytes back, whatever they are, and
about an eighth of the room for a submission at H&M's shape."""

from __future__ import annotations

import gzip
import hashlib
import io
import random

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.competitions import Competition, competitions

from scorer import kept
from scorer.kept import KeptError, Reference, pack, smaller, unpack
from scorer.synthetic import hm_shaped

#: Bytes a submission is made of: separators, digits, hex, and a few others.
PIECES = [b",", b" ", b"\t", b"\n", b"\r\n", b";", b"0", b"007", b"123", b"ab12", b"\xff\xfe", b""]


def targets(ids: list[bytes], header: bytes = b"user_id") -> bytes:
    return b"\n".join([header, *ids]) + b"\n"


def round_trip(data: bytes, reference: Reference, block: int = kept.BLOCK) -> None:
    blob = pack(data, reference, block=block)
    assert unpack(blob, reference) == data


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=400),
    ids=st.lists(st.binary(max_size=8), max_size=8),
    block=st.integers(1, 64),
)
def test_any_bytes_come_back_exactly(data: bytes, ids: list[bytes], block: int) -> None:
    round_trip(data, Reference.of(targets(ids)), block)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=80),
    ids=st.lists(st.sampled_from([b"007", b"123", b"7", b"ab12", b"x y", b"0"]), max_size=6),
    block=st.integers(1, 40),
)
def test_text_made_of_ids_and_separators_comes_back_exactly(
    pieces: list[bytes], ids: list[bytes], block: int
) -> None:
    """Ids of the reference, ids absent from it, leading zeros, CRLF, non-UTF-8 bytes, cut
    into blocks anywhere: every run is where it was."""
    round_trip(b"".join(pieces), Reference.of(targets(ids)), block)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"abcdef0123",  # no separator
        b",,, \n\r\n;\t",  # nothing but separators
        b"\xff\xfe\x00\x80,\xc3\x28\n",  # not UTF-8
        b"user_id,edition_id,rank\r\n0010,0500012,1\r\n0010,0500013,2\r\n",  # CRLF, zeros
        b"customer_id,prediction\n00ab,0174884004 0174884005\n",
    ],
)
def test_the_awkward_files_come_back_exactly(data: bytes) -> None:
    for reference in (
        Reference.of(b""),
        Reference.of(targets([b"0010", b"00ab", b"10"])),  # "10" is in no file
        Reference.of(targets([b"0010", b"0010"], header=b"")),  # an id twice
    ):
        round_trip(data, reference)
        round_trip(data, reference, block=3)


def test_a_file_of_only_new_vocabulary_past_the_shared_limit_comes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past `SHARED_VOCABULARY` a block repeats the entries it uses: still exact."""
    monkeypatch.setattr(kept, "SHARED_VOCABULARY", 5)
    data = b"".join(b"%d,%d\n" % (i % 13, i) for i in range(200))
    round_trip(data, Reference.of(b""), block=50)


@settings(max_examples=40, deadline=None)
@given(competition=competitions(max_users=12), crlf=st.booleans())
def test_a_random_competition_s_submission_comes_back_and_is_kept(
    competition: Competition, crlf: bool
) -> None:
    rows = competition.submission_rows()
    end = "\r\n" if crlf else "\n"
    text = end.join(["user_id,edition_id,rank", *(",".join(r.values()) for r in rows)]) + end
    data = text.encode()
    users = sorted({r["user_id"] for r in rows}, key=int)
    reference = Reference.of(targets([u.encode() for u in users]))
    round_trip(data, reference)
    blob = smaller(data, reference, hashlib.sha256(data).hexdigest())
    assert blob is None or unpack(blob, reference) == data


def hm_files(users: int) -> tuple[bytes, bytes]:
    """An H&M-shaped submission's bytes and its targets' (`synthetic.hm_shaped`)."""
    submission, listed = hm_shaped(users)
    return submission.write_csv().encode(), listed.write_csv().encode()


def test_an_h_and_m_shaped_submission_is_kept_in_a_fifth_of_its_bytes() -> None:
    data, listed = hm_files(20_000)
    reference = Reference.of(listed)
    blob = smaller(data, reference, hashlib.sha256(data).hexdigest())
    assert blob is not None
    assert len(blob) <= 0.20 * len(data)
    assert unpack(blob, reference) == data


def test_compressed_files_and_bytes_of_another_sha256_are_kept_as_received() -> None:
    data, listed = hm_files(200)
    reference = Reference.of(listed)
    parquet = io.BytesIO()
    pl.DataFrame({"a": [1, 2]}).write_parquet(parquet)
    for packed in (gzip.compress(data), parquet.getvalue()):
        assert smaller(packed, reference, hashlib.sha256(packed).hexdigest()) is None
    assert smaller(data, reference, "0" * 64) is None
    noise = random.Random(1).randbytes(5000)  # the codes do not shrink it
    assert smaller(noise, reference, hashlib.sha256(noise).hexdigest()) is None


def test_a_kept_form_needs_the_reference_it_was_made_against() -> None:
    data, listed = hm_files(50)
    blob = pack(data, Reference.of(listed))
    with pytest.raises(KeptError, match="packed against the reference"):
        unpack(blob, Reference.of(listed + b"extra\n"))
    with pytest.raises(KeptError, match="not a kept form"):
        unpack(data, Reference.of(listed))


@settings(max_examples=200, deadline=None)
@given(where=st.integers(0, 10**9), value=st.integers(0, 255), cut=st.booleans())
def test_a_damaged_kept_form_is_refused_never_misread(where: int, value: int, cut: bool) -> None:
    """A byte changed, or the form cut short: a `KeptError`, or the very bytes (a change that
    zstd's frame ignores), never other bytes and never another exception."""
    data = b"user_id,edition_id,rank\n" + b"".join(b"%d,%d,1\n" % (i, i * 7) for i in range(40))
    reference = Reference.of(targets([b"%d" % i for i in range(0, 40, 2)]))
    blob = bytearray(pack(data, reference, block=64))
    at = where % len(blob)
    if cut:
        del blob[at:]
    else:
        blob[at] = value
    try:
        back = unpack(bytes(blob), reference)
    except KeptError:
        return
    assert back == data
