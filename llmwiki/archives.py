"""Input limits for uploads: strict text decoding and defensive zip reading.

Pure Python (no Django). Nothing here writes to disk: zip members are read into memory one
at a time, after every check that can be made from the central directory has passed, so a
hostile archive is refused before a single byte of it is decompressed.
"""

from __future__ import annotations

import io
import re
import stat
import struct
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field

from llmwiki.errors import InputError
from llmwiki.importers.registry import SUFFIXES

__all__ = [
    "DEFAULT",
    "ArchiveMember",
    "Limits",
    "check_suffix",
    "decode_text",
    "read_zip",
    "read_zip_texts",
]

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Limits:
    """Upper bounds applied to uploads and to the members of zip bundles."""

    max_file_bytes: int = 5 * MiB
    max_upload_bytes: int = 50 * MiB
    max_entries: int = 2_000
    max_total_uncompressed: int = 100 * MiB
    max_entry_uncompressed: int = 5 * MiB
    max_ratio: int = 100
    # Tiny files of repeated characters compress far beyond 100:1 and are harmless; the
    # ratio only says "bomb" once the expanded size is large enough to matter.
    ratio_min_bytes: int = 64 * KiB
    # What some importer reads: declared once, in the importer registry (read when the
    # limits are made, so an importer registered later counts).
    allowed_suffixes: frozenset[str] = field(default_factory=lambda: frozenset(SUFFIXES))


DEFAULT = Limits()


@dataclass(frozen=True)
class ArchiveMember:
    """One file read from a zip bundle: its name inside the archive and its bytes."""

    name: str
    data: bytes = field(repr=False)

    def __repr__(self) -> str:
        return f"ArchiveMember(name={self.name!r}, size={len(self.data)})"


# Only these decompress in bounded steps through zipfile: for bzip2 and LZMA the stdlib
# inflates each compressed read without an output cap, so one read could fill memory.
_SUPPORTED_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_ENCRYPTED = 0x1
_READ_CHUNK = 64 * KiB
_MAX_LISTED = 20

_ARCHIVE_SUFFIXES = (
    ".zip",
    ".tar",
    ".gz",
    ".tgz",
    ".bz2",
    ".tbz",
    ".tbz2",
    ".xz",
    ".txz",
    ".lz",
    ".lzma",
    ".zst",
    ".7z",
    ".rar",
    ".cab",
    ".jar",
    ".war",
    ".apk",
    ".iso",
    ".dmg",
)
_ARCHIVE_MAGIC = (
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"PK\x07\x08",
    b"\x1f\x8b",
    b"\xfd7zXZ\x00",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\x28\xb5\x2f\xfd",
    b"MSCF",
)
_BZIP2_MAGIC = re.compile(rb"BZh[1-9]1AY&SY")
_JUNK_NAMES = frozenset({".ds_store", "thumbs.db", "desktop.ini"})
_DRIVE = re.compile(r"[A-Za-z]:")
_SEPARATORS = re.compile(r"[/\\]")
# Bidi and invisible characters let "evil.md\u202e" display as something else entirely.
_SPOOF_CHARS = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_LOCAL_MAGIC = b"PK\x03\x04"
_END = struct.Struct("<4s4H2LH")
_END_MAGIC = b"PK\x05\x06"
_END64_LOCATOR = struct.Struct("<4sLQL")
_END64_LOCATOR_MAGIC = b"PK\x06\x07"
_END64_MAGIC = b"PK\x06\x06"
# A directory record is 46 bytes plus name (at most 1024 here), extra field and comment.
_MAX_RECORD_BYTES = 2048


# --------------------------------------------------------------------------- helpers


def _size(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f}".removesuffix(".0") + " MB"
    if n >= KiB:
        return f"{n / KiB:.1f}".removesuffix(".0") + " KB"
    return f"{n} bytes"


def _over(what: str, size: int, limit: int, limit_label: str = "limit") -> str:
    shown, cap = _size(size), _size(limit)
    if shown == cap:
        # Rounding would print "5 MB, over the 5 MB limit"; show the exact count instead.
        shown = f"{size:,} bytes"
    return f"{what} is {shown}, over the {cap} {limit_label}"


def _display(name: str) -> str:
    """Return ``name`` with control and format characters escaped, safe for one log line."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in name)


def _suffix(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    dot = base.rfind(".")
    return base[dot:].lower() if dot > 0 else ""


def check_suffix(name: str, limits: Limits = DEFAULT) -> None:
    """Raise ``InputError`` unless ``name`` ends in one of the allowed suffixes."""
    reason = _type_problem(name, limits)
    if reason:
        raise InputError(name, reason)


def _type_problem(name: str, limits: Limits) -> str | None:
    if name.lower().endswith(_ARCHIVE_SUFFIXES):
        return "nested archive not allowed"
    suffix = _suffix(name)
    if suffix not in limits.allowed_suffixes:
        allowed = ", ".join(sorted(limits.allowed_suffixes))
        return f"type not allowed ({suffix or 'no suffix'}; allowed: {allowed})"
    return None


# --------------------------------------------------------------------------- text


def decode_text(name: str, data: bytes, limits: Limits = DEFAULT) -> str:
    """Decode an uploaded file as strict UTF-8 text with LF line endings.

    Raise ``InputError`` naming the file when it is too large, binary or not UTF-8.
    """
    if len(data) > limits.max_file_bytes:
        raise InputError(name, _over("file", len(data), limits.max_file_bytes))
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(name, "UTF-16/32 text is not supported; save it as UTF-8")
    if b"\x00" in data:
        raise InputError(name, "binary file (NUL bytes)")
    offset = 0
    if data.startswith(b"\xef\xbb\xbf"):
        offset = 3
    try:
        text = data[offset:].decode("utf-8")
    except UnicodeDecodeError as exc:
        pos = offset + exc.start
        raise InputError(
            name, f"not valid UTF-8 (byte 0x{data[pos]:02x} at offset {pos})"
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


# --------------------------------------------------------------------------- zip


class _MemberError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _name_problem(name: str) -> str | None:
    """Return why an entry name is unsafe, or None. Never rewrite a name to make it safe."""
    if not name:
        return "empty name"
    if "\x00" in name:
        return "NUL byte in name"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "control character in name"
    if _DRIVE.match(name):
        return "absolute path (drive letter)"
    if name.startswith(("/", "\\")):
        return "absolute path"
    if ".." in _SEPARATORS.split(name):
        return "path traversal"
    if "\\" in name:
        return "backslash in name"
    if _SPOOF_CHARS.search(name):
        return "invisible or bidi character in name"
    parts = name.removesuffix("/").split("/")
    if any(p in ("", ".") for p in parts):
        return "not a normalised name"
    if len(name) > 1024 or any(len(p) > 255 for p in parts):
        return "name too long"
    return None


def _is_junk(name: str) -> bool:
    if name.startswith("__MACOSX/"):
        return True
    base = name.removesuffix("/").rsplit("/", 1)[-1]
    return base.lower() in _JUNK_NAMES or base.startswith("._")


def _fold(name: str) -> str:
    # NFC first so composed and decomposed forms meet; casefold can denormalise, so again.
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def _bad_zip_reason(exc: BaseException) -> str:
    msg = str(exc)
    if "Overlapped entries" in msg or "overlap" in msg.lower():
        return "possible zip bomb (overlapped entries)"
    if "CRC" in msg:
        return "corrupt archive: CRC mismatch (data does not match the header)"
    if "differ" in msg:
        return "corrupt archive: local header name differs from the central directory"
    if "file header" in msg:
        return "corrupt archive: bad local header"
    if isinstance(exc, zlib.error):
        return "corrupt archive: bad compressed data"
    return "corrupt archive"


def _local_ranges(
    data: bytes, infos: list[zipfile.ZipInfo], start_dir: int
) -> list[tuple[str, str]]:
    """Check that every entry's local header and data lie apart and before the directory.

    Overlapping entries are how "quoted overlap" bombs reach ratios of millions to one;
    Python only refuses them from 3.12.1/3.11.8 on (gh-109858), so check here too.
    """
    problems: list[tuple[str, str]] = []
    ranges: list[tuple[int, int, str]] = []
    for info in infos:
        off = info.header_offset
        if off < 0 or off + _LOCAL_HEADER.size > start_dir:
            problems.append((info.orig_filename, "corrupt archive: local header out of range"))
            continue
        header = _LOCAL_HEADER.unpack_from(data, off)
        if header[0] != _LOCAL_MAGIC:
            problems.append((info.orig_filename, "corrupt archive: bad local header"))
            continue
        name_len, extra_len = header[10], header[11]
        end = off + _LOCAL_HEADER.size + name_len + extra_len + info.compress_size
        if end > start_dir:
            problems.append((info.orig_filename, "corrupt archive: data runs past its end"))
            continue
        ranges.append((off, end, info.orig_filename))
    ranges.sort()
    prev_end = -1
    for start, end, entry in ranges:
        if start < prev_end:
            problems.append((entry, "possible zip bomb (overlapping entries)"))
        prev_end = max(prev_end, end)
    return problems


def _entry_problem(info: zipfile.ZipInfo, limits: Limits) -> str | None:
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return "symlink not allowed"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "special file not allowed"
    if info.flag_bits & _ENCRYPTED:
        return "encrypted entries not allowed"
    if info.is_dir():
        return None
    reason = _type_problem(info.filename, limits)
    if reason:
        return reason
    if info.compress_type not in _SUPPORTED_METHODS:
        return f"compression method {info.compress_type} not supported"
    if info.file_size > limits.max_entry_uncompressed:
        return _over("entry", info.file_size, limits.max_entry_uncompressed, "per-file limit")
    if info.file_size > limits.ratio_min_bytes:
        if info.compress_size == 0:
            return "possible zip bomb (no compressed data for a non-empty entry)"
        ratio = info.file_size / info.compress_size
        if ratio > limits.max_ratio:
            return (
                f"compression ratio {ratio:,.0f}:1 over the {limits.max_ratio}:1 limit"
                " (possible zip bomb)"
            )
    return None


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    chunks: list[bytes] = []
    total = 0
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(_READ_CHUNK)
            if not chunk:
                break
            total += len(chunk)
            # zipfile trims output to the declared size, but never trust one layer only.
            if total > info.file_size:
                raise _MemberError("corrupt archive: larger than declared")
            chunks.append(chunk)
    if total != info.file_size:
        raise _MemberError("corrupt archive: smaller than declared")
    return b"".join(chunks)


def _is_archive_bytes(data: bytes) -> bool:
    return (
        data.startswith(_ARCHIVE_MAGIC)
        or _BZIP2_MAGIC.match(data, 0, 10) is not None
        or data[257:262] == b"ustar"
    )


def _listing(problems: list[tuple[str, str]]) -> str:
    shown = "; ".join(f"{_display(n)} ({r})" for n, r in problems[:_MAX_LISTED])
    more = len(problems) - _MAX_LISTED
    if more > 0:
        shown += f"; … and {more} more"
    noun = "entry" if len(problems) == 1 else "entries"
    return f"{len(problems)} bad {noun}: {shown}"


def _reject(name: str, problems: list[tuple[str, str]], archive: list[str] | None = None) -> None:
    parts = list(archive or [])
    if problems:
        parts.append(_listing(problems))
    raise InputError(name, "; ".join(parts))


def _directory_size(data: bytes) -> tuple[int, int] | None:
    """Return (entry count, directory bytes) from the end record, or None if not found."""
    pos = data.rfind(_END_MAGIC, max(0, len(data) - _END.size - 0xFFFF))
    if pos < 0 or pos + _END.size > len(data):
        return None
    _sig, _disk, _cd_disk, _n_disk, count, size, _off, _comment = _END.unpack_from(data, pos)
    loc = pos - _END64_LOCATOR.size
    if (count == 0xFFFF or size == 0xFFFFFFFF) and loc >= 0:
        sig, _disk, end64, _disks = _END64_LOCATOR.unpack_from(data, loc)
        if sig == _END64_LOCATOR_MAGIC and data[end64 : end64 + 4] == _END64_MAGIC:
            if end64 + 48 > len(data):
                return None
            count, size = struct.unpack_from("<QQ", data, end64 + 32)
    return count, size


def _open_zip(name: str, data: bytes, limits: Limits) -> zipfile.ZipFile:
    if len(data) > limits.max_upload_bytes:
        raise InputError(name, _over("upload", len(data), limits.max_upload_bytes))
    # zipfile builds a ZipInfo per directory record before we can count them; a 50 MB
    # upload can hold a million tiny records, so read the declared count first.
    directory = _directory_size(data)
    if directory is not None:
        count, size = directory
        if count > limits.max_entries:
            raise InputError(name, f"too many entries ({count:,}, limit {limits.max_entries:,})")
        if size > limits.max_entries * _MAX_RECORD_BYTES:
            raise InputError(
                name, f"central directory is {_size(size)}, too large (possible zip bomb)"
            )
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        if "not a zip file" in str(exc):
            raise InputError(name, "not a zip file") from None
        raise InputError(name, _bad_zip_reason(exc)) from None
    except (OSError, EOFError, ValueError, NotImplementedError, struct.error, OverflowError):
        raise InputError(name, "corrupt archive") from None


def read_zip(name: str, data: bytes, limits: Limits = DEFAULT) -> list[ArchiveMember]:
    """Return the files of a zip bundle after checking every entry against ``limits``.

    Directories and OS junk (``__MACOSX/``, ``.DS_Store``) are skipped. Every offending
    entry is collected and reported in one ``InputError`` naming the archive; nothing is
    decompressed unless all checks on the central directory pass.
    """
    with _open_zip(name, data, limits) as zf:
        infos = zf.infolist()
        if len(infos) > limits.max_entries:
            raise InputError(
                name, f"too many entries ({len(infos):,}, limit {limits.max_entries:,})"
            )
        problems = _local_ranges(data, infos, zf.start_dir)
        wanted = _wanted(infos, limits, problems)
        declared = sum(info.file_size for info in wanted)
        archive: list[str] = []
        if declared > limits.max_total_uncompressed:
            archive.append(
                _over("declared uncompressed size", declared, limits.max_total_uncompressed)
                + " (possible zip bomb)"
            )
        if problems or archive:
            _reject(name, problems, archive)
        members = _members(zf, wanted, problems)
        if problems:
            _reject(name, problems)
        return members


def _wanted(
    infos: list[zipfile.ZipInfo], limits: Limits, problems: list[tuple[str, str]]
) -> list[zipfile.ZipInfo]:
    """The file entries to read, from the central directory alone; what is wrong with the
    others (names, sizes, clashes) is added to `problems`, once per entry."""
    flagged = {entry for entry, _ in problems}
    wanted: list[zipfile.ZipInfo] = []
    exact: set[str] = set()
    normalised: dict[str, str] = {}
    folded: dict[str, str] = {}
    parents: set[str] = set()
    files: list[tuple[str, str]] = []
    for info in infos:
        entry = info.orig_filename
        reason = _name_problem(entry)
        if reason is None and not _is_junk(info.filename):
            reason = _entry_problem(info, limits)
            if reason is None:
                path = info.filename.removesuffix("/")
                nfc, key = unicodedata.normalize("NFC", path), _fold(path)
                if path in exact:
                    reason = "duplicate name"
                elif nfc in normalised:
                    reason = f"same name as {_display(normalised[nfc])} once normalised"
                elif key in folded:
                    reason = f"differs only in case from {_display(folded[key])}"
                exact.add(path)
                normalised.setdefault(nfc, path)
                folded.setdefault(key, path)
                if reason is None and not info.is_dir():
                    wanted.append(info)
                    files.append((entry, key))
                    segments = key.split("/")
                    parents.update("/".join(segments[:i]) for i in range(1, len(segments)))
        if reason and entry not in flagged:
            problems.append((entry, reason))
            flagged.add(entry)
    for entry, key in files:
        if key in parents and entry not in flagged:
            problems.append((entry, "file name clashes with a directory"))
    return wanted


def _members(
    zf: zipfile.ZipFile, wanted: list[zipfile.ZipInfo], problems: list[tuple[str, str]]
) -> list[ArchiveMember]:
    """Decompress the wanted entries; an entry that cannot be read is added to `problems`."""
    members: list[ArchiveMember] = []
    for info in wanted:
        entry = info.orig_filename
        try:
            content = _read_member(zf, info)
        except _MemberError as exc:
            problems.append((entry, exc.reason))
            continue
        except (zipfile.BadZipFile, zlib.error) as exc:
            problems.append((entry, _bad_zip_reason(exc)))
            continue
        except (OSError, EOFError, ValueError, NotImplementedError, RuntimeError, struct.error):
            problems.append((entry, "corrupt archive"))
            continue
        if _is_archive_bytes(content):
            problems.append((entry, "nested archive not allowed"))
            continue
        members.append(ArchiveMember(info.filename, content))
    return members


def read_zip_texts(name: str, data: bytes, limits: Limits = DEFAULT) -> list[tuple[str, str]]:
    """Return ``(entry name, text)`` for every file of a zip bundle, decoded strictly.

    A single bad member raises ``InputError`` named ``<zip>!<entry>``; several are listed
    in one error named after the zip.
    """
    members = read_zip(name, data, limits)
    members.reverse()
    texts: list[tuple[str, str]] = []
    problems: list[tuple[str, str]] = []
    while members:
        member = members.pop()  # drop each member's bytes once its text exists
        try:
            texts.append((member.name, decode_text(f"{name}!{member.name}", member.data, limits)))
        except InputError as exc:
            problems.append((member.name, exc.reason))
    if len(problems) == 1:
        entry, reason = problems[0]
        raise InputError(f"{name}!{_display(entry)}", reason)
    if problems:
        _reject(name, problems)
    return texts
