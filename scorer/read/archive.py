"""A zip upload: the one CSV or Parquet file it holds, judged from the archive's central
directory before a byte is inflated, then copied out with its output counted."""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

from scorer.errors import Code, shorten, single
from scorer.read.files import BLOCK, HEAD, FileKind, Output, kind_of, open_regular, sniff
from scorer.read.limits import Limits, Rejected

#: A zip upload holds one data file; entries zip tools add beside it are skipped.
ZIP_IGNORED = ("__MACOSX/",)

#: At most this many entries in a zip's central directory (a bound before reading any).
MAX_ZIP_ENTRIES = 1000


def extract(path: Path, file: str, limits: Limits, folder: Path) -> tuple[FileKind, Path]:
    """The kind (`csv` or `parquet`) and a copy in `folder` of the one data member of the zip
    at `path`. Refused before inflating: more entries than `MAX_ZIP_ENTRIES`, members adding up
    past the decompressed cap, more or fewer than one data member, a member over the file size
    cap, an encrypted one; while inflating, output past the cap whatever the directory
    claims."""

    def refuse(code: Code, message: str) -> Rejected:
        return Rejected(single(file, code, f"{file}: {message}"))

    with open_regular(path, file) as handle:
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise refuse(
                Code.FILE_CORRUPT, f"not a readable zip archive ({shorten(exc)})"
            ) from None
        with archive:
            entries = archive.infolist()
            if len(entries) > MAX_ZIP_ENTRIES:
                raise refuse(
                    Code.FILE_FORMAT,
                    f"the zip holds {len(entries):,} entries; expected one .csv or .parquet file",
                )
            total = sum(e.file_size for e in entries)
            if total > limits.max_decompressed_bytes:
                raise refuse(
                    Code.FILE_TOO_LARGE,
                    f"the zip expands to {total:,} bytes; at most "
                    f"{limits.max_decompressed_bytes:,} are accepted",
                )
            members = [
                e
                for e in entries
                if not e.is_dir()
                and not e.filename.startswith(ZIP_IGNORED)
                and not Path(e.filename).name.startswith(".")
            ]
            if len(members) != 1:
                names = ", ".join(shorten(m.filename) for m in members[:5])
                found = f"{len(members)} files ({names})" if members else "no file"
                raise refuse(
                    Code.FILE_FORMAT,
                    f"the zip holds {found}; expected exactly one .csv or .parquet file",
                )
            member = members[0]
            if member.file_size > limits.max_file_bytes:
                raise refuse(
                    Code.FILE_TOO_LARGE,
                    f"{shorten(member.filename)} in the zip has {member.file_size:,} bytes; at "
                    f"most {limits.max_file_bytes:,} are accepted",
                )
            if member.flag_bits & 0x1:
                raise refuse(Code.FILE_FORMAT, "the zip is encrypted; upload it without a password")
            cap = min(limits.max_file_bytes, limits.max_decompressed_bytes)
            copy = folder / "member"
            head = b""
            try:
                with archive.open(member) as inner, Output(copy, "unzip an upload") as out:
                    done = 0
                    while chunk := inner.read(BLOCK):
                        done += len(chunk)
                        if done > cap:
                            raise refuse(
                                Code.FILE_TOO_LARGE, f"the zip expands to more than {cap:,} bytes"
                            )
                        head = head or chunk[:HEAD]
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError) as exc:
                raise refuse(
                    Code.FILE_CORRUPT, f"the zip data is corrupt ({shorten(exc)})"
                ) from None
    inner_kind = kind_of(Path(member.filename))
    if head.startswith(b"PAR1") or inner_kind == "parquet":
        return "parquet", copy.rename(folder / "member.parquet")
    sniffed = sniff(head)
    if inner_kind not in (None, "csv") or sniffed is not None:
        what = sniffed[0] if sniffed is not None else f"a {inner_kind} file"
        raise refuse(
            Code.FILE_FORMAT,
            f"the zip holds {shorten(member.filename)}, {what}; expected a .csv or .parquet file",
        )
    return "csv", copy.rename(folder / "member.csv")
