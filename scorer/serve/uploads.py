"""An upload streamed from a multipart body straight into the server's folder: hashed while it
is written, never held whole in memory, never larger than the cap, on disk (fsynced) before
the store hears of it."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from io import BufferedWriter
from pathlib import Path
from typing import TYPE_CHECKING

from anyio import to_thread
from python_multipart.multipart import MultipartParser, parse_options_header

from scorer.serve import notes
from scorer.write import sync_folder

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

#: The suffixes an upload's name keeps (the scorer reads the file by them); any other name is
#: stored without a suffix and read by its content, as `scorer validate` reads it.
SUFFIXES = (".csv.gz", ".csv", ".parquet", ".zip", ".gz")

#: A file name kept as it is: letters, digits, `.`, `_` and `-`, at most 100 of them.
_PLAIN = re.compile(r"[A-Za-z0-9._-]{1,100}")

#: How much of a body is handed to the thread that parses and writes it at a time.
BATCH = 1 << 20

#: The form field that carries the file.
FIELD = b"file"

#: The most bytes kept of any other field.
FIELD_BYTES = 1024

#: The most bytes of a body that are not the file's: every part's headers and every other
#: field, counted together, on every route. Past it the body is refused at once, so that no
#: number of fields or headers, however small each, grows the server's memory.
FIELDS_BYTES = 64 * 1024


class UploadError(Exception):
    """An upload that is not one: `status` is the HTTP status, `code` the error's code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class Upload:
    """A file on disk: `path` relative to the server's folder; `filename`: the name it was
    sent as (`notes.filename`)."""

    path: str
    suffix: str
    sha256: str
    size: int
    fields: dict[str, str] = field(default_factory=dict)
    filename: str = ""


def suffix_of(filename: str) -> str:
    """The suffix an upload named `filename` keeps (lower case), or "" to read it by content."""
    lower = filename.lower()
    return next((s for s in SUFFIXES if lower.endswith(s)), "")


def too_large(most: int) -> UploadError:
    return UploadError(413, "too_large", f"the upload is over {most:,} bytes, the server's cap")


async def receive(
    content_type: str,
    body: AsyncIterator[bytes],
    folder: Path,
    uploads: str,
    most: int,
    admit: Callable[[dict[str, str]], object] | None = None,
) -> Upload:
    """Stream the `file` field of a multipart body into a new file under `folder/uploads`;
    the file, fsynced, with the sha256 and size of its bytes. Anything else, a second file or
    a body past `most` bytes of file is an `UploadError`, and no file is left behind.

    `admit` is called with the fields read so far when the file begins (a form sends its
    token first): whatever it raises stops the upload before a byte of the file is kept."""
    kind, options = parse_options_header(content_type)
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UploadError(400, "not_multipart", "expected a multipart/form-data body")
    home = folder / uploads / secrets.token_hex(16)  # a folder of its own, never reused
    home.mkdir(mode=0o700)
    state = _Part(home, most, admit)
    parser = MultipartParser(boundary, state.callbacks())

    def parse(chunks: list[bytes]) -> None:
        for chunk in chunks:
            parser.write(chunk)
            if state.error is not None:
                raise state.error

    try:
        # parsed, hashed and written in a worker thread, a mebibyte at a time: the event loop
        # goes on answering other requests meanwhile
        waiting: list[bytes] = []
        async for chunk in body:
            waiting.append(chunk)
            if sum(map(len, waiting)) >= BATCH:
                await to_thread.run_sync(parse, waiting)
                waiting = []
        await to_thread.run_sync(parse, waiting)
        await to_thread.run_sync(state.finish, parser)
        fields = {k: v.decode("utf-8", "replace") for k, v in state.fields.items()}
        path = f"{uploads}/{home.name}/{state.target.name}"
        sent = notes.filename(state.given)
        return Upload(path, state.suffix, state.hashed.hexdigest(), state.size, fields, sent)
    except BaseException as exc:
        state.discard()
        if isinstance(exc, UploadError):
            raise
        if isinstance(exc, ValueError):  # python-multipart's word for a malformed body
            raise UploadError(400, "bad_multipart", "the multipart body is malformed") from None
        raise


def stored_name(filename: str) -> str:
    """The name an upload is stored and judged under: the participant's own file name when
    it is a plain one (so that the report names it as `scorer validate` does), else
    `submission` with the suffix it keeps."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    if _PLAIN.fullmatch(base) and not base.startswith("."):
        return base
    return f"submission{suffix_of(base)}"


def discard(folder: Path, upload: Upload) -> None:
    """Remove an upload the store refused: it was never accepted, so it is no submission."""
    shutil.rmtree((folder / upload.path).parent, ignore_errors=True)


class _Part:
    """The parser's callbacks: headers of each part, and the file part's bytes to disk."""

    def __init__(
        self, home: Path, most: int, admit: Callable[[dict[str, str]], object] | None
    ) -> None:
        self.home, self.most, self.admit = home, most, admit
        self.target = home / "submission"
        self.suffix = ""
        self.given = ""
        self.handle: BufferedWriter | None = None
        self.hashed = hashlib.sha256()
        self.size = 0
        self.done = False
        self.error: Exception | None = None
        self._field, self._value = b"", b""
        self._headers: dict[bytes, bytes] = {}
        self._is_file = False
        self._name = ""
        #: Bytes of the body that were not the file's (`_spend`).
        self.spent = 0
        #: The body's other fields (the page's form sends the token as one).
        self.fields: dict[str, bytes] = {}

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._data,
            "on_part_end": self._end,
        }

    def _begin(self) -> None:
        self._headers, self._is_file = {}, False

    def _spend(self, count: int) -> bool:
        """Count `count` bytes that are not the file's; False (and the body refused) past
        `FIELDS_BYTES`."""
        self.spent += count
        if self.spent > FIELDS_BYTES and self.error is None:
            self.error = UploadError(
                413, "fields_too_large", f"the form's fields are over {FIELDS_BYTES:,} bytes"
            )
        return self.error is None

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        if self._spend(end - start):
            self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        if self._spend(end - start):
            self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._field.lower()] = self._value
        self._field, self._value = b"", b""

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        self._name = options.get(b"name", b"").decode("utf-8", "replace")
        if options.get(b"name") != FIELD:
            return  # another field (the page's token): kept in memory, at most FIELD_BYTES
        if self.handle is not None:
            self.error = UploadError(400, "two_files", "expected one file; the body holds two")
            return
        if self.admit is not None:
            try:
                self.admit({k: v.decode("utf-8", "replace") for k, v in self.fields.items()})
            except Exception as exc:  # the caller's refusal: `receive` raises it
                self.error = exc
                return
        given = options.get(b"filename", b"").decode("utf-8", "replace")
        if not given.strip():
            self.error = UploadError(400, "no_file_name", "the file part has no file name")
            return
        self._is_file = True
        self.given = given
        name = stored_name(given)
        self.target, self.suffix = self.home / name, suffix_of(name)
        fd = os.open(self.target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self.handle = os.fdopen(fd, "wb")

    def _data(self, data: bytes, start: int, end: int) -> None:
        if not self._is_file and self.error is None:
            if not self._spend(end - start):
                return
            value = self.fields.get(self._name, b"") + data[start:end]
            if len(value) > FIELD_BYTES:
                self.error = UploadError(
                    400, "field_too_long", f"the field {self._name!r} is too long"
                )
            self.fields[self._name] = value
            return
        if not self._is_file or self.handle is None or self.error is not None:
            return
        self.size += end - start
        if self.size > self.most:
            self.error = too_large(self.most)
            return
        piece = memoryview(data)[start:end]
        self.hashed.update(piece)
        try:
            self.handle.write(piece)
        except OSError as exc:  # a full disk: the upload is refused, whole, and said why
            self.error = UploadError(
                507, "no_room", f"the server cannot keep the upload now ({exc.strerror})"
            )

    def _end(self) -> None:
        if self._is_file:
            self.done = True
            self._is_file = False

    def finish(self, parser: MultipartParser) -> None:
        """The body's end: the file complete, on disk, and its folder too."""
        parser.finalize()
        if self.error is not None:
            raise self.error
        if self.handle is None or not self.done:
            raise UploadError(400, "no_file", "expected the file in a form field named 'file'")
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            sync_folder(self.home)
            sync_folder(self.home.parent)
        except OSError as exc:
            raise UploadError(
                507, "no_room", f"the server cannot keep the upload now ({exc.strerror})"
            ) from None

    def discard(self) -> None:
        if self.handle is not None:
            self.handle.close()
        shutil.rmtree(self.home, ignore_errors=True)
