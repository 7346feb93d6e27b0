"""Tests for upload limits and defensive zip reading (llmwiki.archives): no database."""

from __future__ import annotations

import io
import struct
import tracemalloc
import unicodedata
import warnings
import zipfile
import zlib

import pytest

from llmwiki.archives import (
    DEFAULT,
    ArchiveMember,
    Limits,
    check_suffix,
    decode_text,
    read_zip,
    read_zip_texts,
)
from llmwiki.errors import InputError

MiB = 1024 * 1024


# ------------------------------------------------------------------------------ helpers


def make_zip(*entries: tuple[str | zipfile.ZipInfo, bytes], deflate: bool = True) -> bytes:
    """Build a zip in memory; names are written verbatim, never sanitised."""
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names; we want them
        with zipfile.ZipFile(buf, "w", method) as zf:
            for name, data in entries:
                info = name if isinstance(name, zipfile.ZipInfo) else zipfile.ZipInfo(name)
                info.compress_type = method
                zf.writestr(info, data)
    return buf.getvalue()


# Offsets of fields in the central directory record and in the local file header.
_CD = {"flag_bits": (8, "<H"), "compress_size": (20, "<L"), "file_size": (24, "<L"),
       "header_offset": (42, "<L"), "external_attr": (38, "<L")}  # fmt: skip
_LH = {"flag_bits": (6, "<H"), "compress_size": (18, "<L"), "file_size": (22, "<L")}


def patch_zip(data: bytes, name: str, **fields: int) -> bytes:
    """Rewrite header fields of entry ``name`` in the central directory and local header."""
    out = bytearray(data)
    pos = out.rfind(b"PK\x05\x06")
    (cd_offset,) = struct.unpack_from("<L", out, pos + 16)
    i = cd_offset
    while out[i : i + 4] == b"PK\x01\x02":
        n, m, k = struct.unpack_from("<3H", out, i + 28)
        entry = bytes(out[i + 46 : i + 46 + n]).decode("utf-8", "replace")
        if entry == name:
            (local,) = struct.unpack_from("<L", out, i + 42)
            for field, value in fields.items():
                off, fmt = _CD[field]
                struct.pack_into(fmt, out, i + off, value)
                if field in _LH:
                    off, fmt = _LH[field]
                    struct.pack_into(fmt, out, local + off, value)
            return bytes(out)
        i += 46 + n + m + k
    raise KeyError(name)


def header_offset(data: bytes, name: str) -> int:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return zf.getinfo(name).header_offset


def reject(data: bytes, limits: Limits = DEFAULT, name: str = "bundle.zip") -> str:
    with pytest.raises(InputError) as exc_info:
        read_zip(name, data, limits)
    assert exc_info.value.name == name
    return str(exc_info.value)


NOTE = b"# Note\n\nWe chose SQLite.\n"


# ------------------------------------------------------------------------------ decode_text


def test_it_decodes_utf8_and_normalises_line_endings():
    assert decode_text("a.md", "one\r\ntwo\rthree\nvier ü".encode()) == "one\ntwo\nthree\nvier ü"


def test_it_strips_a_utf8_byte_order_mark():
    assert decode_text("a.md", b"\xef\xbb\xbfhello") == "hello"


def test_a_file_over_the_size_limit_names_the_limit():
    with pytest.raises(InputError) as exc_info:
        decode_text("big.md", b"x" * int(6.2 * MiB))

    assert str(exc_info.value) == "big.md: file is 6.2 MB, over the 5 MB limit"


def test_a_file_just_over_the_limit_shows_exact_bytes():
    with pytest.raises(InputError, match=r"big.md: file is 5,242,881 bytes, over the 5 MB limit"):
        decode_text("big.md", b"x" * (5 * MiB + 1))


def test_a_file_at_the_limit_is_accepted():
    assert len(decode_text("ok.md", b"x" * (5 * MiB))) == 5 * MiB


def test_nul_bytes_mean_binary():
    with pytest.raises(InputError, match=r"^img.md: binary file \(NUL bytes\)$"):
        decode_text("img.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_invalid_utf8_names_the_byte_and_offset():
    with pytest.raises(InputError, match=r"^latin.md: not valid UTF-8 \(byte 0xe9 at offset 3\)$"):
        decode_text("latin.md", "caf\u00e9".encode("latin-1"))


def test_invalid_utf8_offset_counts_the_bom():
    with pytest.raises(InputError, match=r"at offset 4\)$"):
        decode_text("x.md", b"\xef\xbb\xbfa\xff")


def test_utf16_gets_a_helpful_message():
    with pytest.raises(InputError, match="UTF-16"):
        decode_text("w.txt", "hello".encode("utf-16"))


def test_empty_file_is_empty_text():
    assert decode_text("e.md", b"") == ""


def test_check_suffix():
    check_suffix("notes/a.MD")
    with pytest.raises(InputError, match=r"run.sh: type not allowed \(\.sh;"):
        check_suffix("run.sh")
    with pytest.raises(InputError, match="nested archive not allowed"):
        check_suffix("x.tar.gz")


# ------------------------------------------------------------------------------ happy path


def test_it_reads_allowed_members_and_skips_directories_and_os_junk():
    data = make_zip(
        ("notes/", b""),
        ("notes/a.md", NOTE),
        ("log.jsonl", b'{"id": 1}\n'),
        ("b.TXT", b"plain"),
        ("__MACOSX/notes/._a.md", b"\x00\x05\x16\x07binary"),
        ("notes/.DS_Store", b"\x00\x00\x00\x01Bud1"),
        ("._c.md", b"\x00appledouble"),
    )
    members = read_zip("bundle.zip", data)

    assert members == [
        ArchiveMember("notes/a.md", NOTE),
        ArchiveMember("log.jsonl", b'{"id": 1}\n'),
        ArchiveMember("b.TXT", b"plain"),
    ]


def test_stored_members_are_read_too():
    assert read_zip("s.zip", make_zip(("a.md", NOTE), deflate=False)) == [
        ArchiveMember("a.md", NOTE)
    ]


def test_read_zip_texts_decodes_every_member():
    data = make_zip(("a.md", b"\xef\xbb\xbfone\r\ntwo"), ("b.json", b"{}"))

    assert read_zip_texts("b.zip", data) == [("a.md", "one\ntwo"), ("b.json", "{}")]


def test_an_empty_archive_has_no_members():
    assert read_zip("e.zip", make_zip()) == []


def test_member_repr_does_not_dump_content():
    assert repr(ArchiveMember("a.md", b"secret" * 1000)) == "ArchiveMember(name='a.md', size=6000)"


# ------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("../../x.md", "path traversal"),
        ("a/../../b.md", "path traversal"),
        ("notes/../x.md", "path traversal"),
        ("..\\..\\x.md", "path traversal"),
        ("/abs.md", "absolute path"),
        ("\\abs.md", "absolute path"),
        ("C:\\x.md", "absolute path (drive letter)"),
        ("c:/x.md", "absolute path (drive letter)"),
        ("dir\\x.md", "backslash in name"),
        ("./a.md", "not a normalised name"),
        ("a//b.md", "not a normalised name"),
        ("a/./b.md", "not a normalised name"),
        ("a\x01.md", "control character in name"),
        ("evil\u202edm.txt", "invisible or bidi character in name"),
        ("x" * 300 + ".md", "name too long"),
    ],
)
def test_unsafe_names_are_refused_naming_entry_and_reason(entry, reason):
    message = reject(make_zip(("ok.md", NOTE), (entry, NOTE)))

    # Control and format characters are shown escaped so the message stays one clean line.
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in entry)
    assert message == f"bundle.zip: 1 bad entry: {shown} ({reason})"


def test_it_lists_every_offending_entry_in_one_error():
    link = zipfile.ZipInfo("link.md")
    link.create_system = 3
    link.external_attr = 0o120777 << 16
    data = make_zip(("../evil.md", NOTE), ("fine.md", NOTE), (link, b"/etc/passwd"))

    assert reject(data) == (
        "bundle.zip: 2 bad entries: ../evil.md (path traversal); link.md (symlink not allowed)"
    )


def test_a_nul_byte_in_a_name_is_refused():
    data = make_zip(("abc.md", NOTE))
    data = data.replace(b"abc.md", b"a\x00c.md")

    assert "NUL byte in name" in reject(data)


def test_a_traversal_directory_entry_is_refused_too():
    assert "../up/ (path traversal)" in reject(make_zip(("../up/", b"")))


# ------------------------------------------------------------------------------ special members


def test_symlinks_are_refused():
    info = zipfile.ZipInfo("notes/link.md")
    info.create_system = 3
    info.external_attr = 0o120777 << 16

    assert reject(make_zip((info, b"../../etc/passwd"))) == (
        "bundle.zip: 1 bad entry: notes/link.md (symlink not allowed)"
    )


@pytest.mark.parametrize("mode", [0o010644, 0o020644, 0o060644, 0o140644])
def test_fifos_devices_and_sockets_are_refused(mode):
    info = zipfile.ZipInfo("dev.md")
    info.create_system = 3
    info.external_attr = mode << 16

    assert "dev.md (special file not allowed)" in reject(make_zip((info, b"")))


def test_regular_unix_files_with_modes_are_fine():
    info = zipfile.ZipInfo("a.md")
    info.create_system = 3
    info.external_attr = 0o100644 << 16

    assert read_zip("b.zip", make_zip((info, NOTE))) == [ArchiveMember("a.md", NOTE)]


def test_encrypted_entries_are_refused():
    data = patch_zip(make_zip(("secret.md", NOTE)), "secret.md", flag_bits=0x1)

    assert reject(data) == "bundle.zip: 1 bad entry: secret.md (encrypted entries not allowed)"


@pytest.mark.parametrize("suffix", [".zip", ".tar", ".gz", ".tgz", ".7z", ".rar", ".xz", ".bz2"])
def test_nested_archives_are_refused_by_suffix(suffix):
    data = make_zip((f"inner{suffix}", make_zip(("a.md", NOTE))))

    assert f"inner{suffix} (nested archive not allowed)" in reject(data)


@pytest.mark.parametrize(
    "payload",
    [
        make_zip(("a.md", NOTE)),
        b"\x1f\x8b\x08\x00" + b"gzip",
        b"BZh91AY&SY" + b"bzip2",
        b"\xfd7zXZ\x00" + b"xz",
        b"7z\xbc\xaf\x27\x1c" + b"7z",
        b"Rar!\x1a\x07\x00" + b"rar",
        b"a.md".ljust(257, b"\x00") + b"ustar\x0000",
    ],
    ids=["zip", "gzip", "bzip2", "xz", "7z", "rar", "tar"],
)
def test_nested_archives_are_refused_by_magic_bytes(payload):
    data = make_zip(("disguised.md", payload))

    assert reject(data) == "bundle.zip: 1 bad entry: disguised.md (nested archive not allowed)"


@pytest.mark.parametrize("entry", ["run.sh", "image.png", "README", "page.html", "x.md.exe"])
def test_disallowed_types_are_refused(entry):
    assert f"{entry} (type not allowed" in reject(make_zip((entry, b"x")))


def test_allowed_suffixes_follow_the_limits():
    limits = Limits(allowed_suffixes=frozenset({".csv"}))

    assert read_zip("b.zip", make_zip(("a.csv", b"x,y")), limits) == [
        ArchiveMember("a.csv", b"x,y")
    ]
    assert "a.md (type not allowed (.md; allowed: .csv))" in reject(
        make_zip(("a.md", NOTE)), limits
    )


# ------------------------------------------------------------------------------ collisions


def test_duplicate_names_are_refused():
    data = make_zip(("notes.md", NOTE), ("notes.md", b"# Overwritten\n"))

    assert reject(data) == "bundle.zip: 1 bad entry: notes.md (duplicate name)"


def test_case_fold_collisions_are_refused():
    data = make_zip(("Notes.md", NOTE), ("notes.md", NOTE))

    assert reject(data) == "bundle.zip: 1 bad entry: notes.md (differs only in case from Notes.md)"


def test_case_fold_collisions_in_directories_are_refused():
    data = make_zip(("Docs/a.md", NOTE), ("docs/A.md", NOTE))

    assert "docs/A.md (differs only in case from Docs/a.md)" in reject(data)


def test_unicode_normalisation_collisions_are_refused():
    nfc = unicodedata.normalize("NFC", "café.md")
    nfd = unicodedata.normalize("NFD", "café.md")
    assert nfc != nfd

    message = reject(make_zip((nfc, NOTE), (nfd, NOTE)))

    assert "1 bad entry:" in message
    assert "once normalised" in message


def test_a_file_that_clashes_with_a_directory_is_refused():
    data = make_zip(("a.md", NOTE), ("a.md/b.md", NOTE))

    assert "a.md (file name clashes with a directory)" in reject(data)


# ------------------------------------------------------------------------------ counts and sizes


def test_too_many_entries_are_refused_before_anything_else():
    data = make_zip(*[(f"n{i}.md", NOTE) for i in range(4)])

    assert reject(data, Limits(max_entries=3)) == "bundle.zip: too many entries (4, limit 3)"


def test_a_declared_entry_count_is_checked_before_the_directory_is_parsed():
    data = bytearray(make_zip(("a.md", NOTE)))
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 60_000, 60_000)

    assert reject(bytes(data)) == "bundle.zip: too many entries (60,000, limit 2,000)"


def test_an_understated_entry_count_is_still_caught_after_parsing():
    data = bytearray(make_zip(*[(f"n{i}.md", NOTE) for i in range(4)]))
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", data, end + 8, 1, 1)

    assert reject(bytes(data), Limits(max_entries=3)) == "bundle.zip: too many entries (4, limit 3)"


def test_the_default_entry_limit_is_2000():
    data = make_zip(*[(f"n{i}.md", b"x") for i in range(2001)])

    assert reject(data) == "bundle.zip: too many entries (2,001, limit 2,000)"


def test_an_upload_over_the_limit_is_refused_with_the_limit_in_the_message():
    with pytest.raises(InputError, match=r"^big.zip: upload is 2 MB, over the 1 MB limit$"):
        read_zip("big.zip", b"x" * 2 * MiB, Limits(max_upload_bytes=MiB))


def test_an_entry_over_the_per_file_limit_is_refused():
    data = make_zip(("big.md", b"x" * 3000))

    assert reject(data, Limits(max_entry_uncompressed=2048)) == (
        "bundle.zip: 1 bad entry: big.md (entry is 2.9 KB, over the 2 KB per-file limit)"
    )


def test_a_member_with_a_ratio_over_the_limit_is_refused_before_decompression():
    data = make_zip(("zeros.md", b"0" * MiB))  # deflates about 1000:1

    message = reject(data)

    assert message.startswith("bundle.zip: 1 bad entry: zeros.md (compression ratio ")
    assert "over the 100:1 limit (possible zip bomb)" in message


def test_small_highly_compressible_files_are_fine():
    data = make_zip(("rule.md", b"-" * 10_000))

    assert read_zip("b.zip", data)[0].data == b"-" * 10_000


def test_declared_total_over_the_cap_is_refused():
    data = make_zip(*[(f"part{i}.md", bytes(range(256)) * 8) for i in range(3)])

    assert reject(data, Limits(max_total_uncompressed=5000)) == (
        "bundle.zip: declared uncompressed size is 6 KB, over the 4.9 KB limit (possible zip bomb)"
    )


def test_a_gigabyte_bomb_is_refused_from_the_directory_with_small_peak_memory():
    real = make_zip(("bomb.md", b"\x00" * MiB))
    bomb = patch_zip(real, "bomb.md", file_size=2**30)

    tracemalloc.start()
    try:
        with pytest.raises(InputError) as exc_info:
            read_zip("bomb.zip", bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert "bomb.md (entry is 1024 MB, over the 5 MB per-file limit)" in str(exc_info.value)
    assert peak < 256 * 1024


def test_a_member_that_inflates_past_its_declared_size_is_cut_off():
    # 20 MB of zeros declared as 1000 bytes: the reader must stop at the declared size
    # instead of inflating everything, and report the archive as corrupt.
    real = make_zip(("liar.md", b"\x00" * (20 * MiB)))
    liar = patch_zip(real, "liar.md", file_size=1000)

    tracemalloc.start()
    try:
        message = reject(liar)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert message.startswith("bundle.zip: 1 bad entry: liar.md (corrupt archive")
    assert peak < 2 * MiB


# ------------------------------------------------------------------------------ corrupt input


@pytest.mark.parametrize(
    "data",
    [b"", b"PK", b"not a zip at all", b"PK\x03\x04" + b"\x00" * 100],
    ids=["empty", "two-bytes", "text", "bare-local-header"],
)
def test_empty_or_non_zip_data_is_not_a_zip_file(data):
    assert reject(data) == "bundle.zip: not a zip file"


def test_a_truncated_zip_is_not_a_zip_file():
    data = make_zip(("a.md", NOTE * 50), ("b.md", NOTE))

    assert reject(data[: len(data) // 2]) == "bundle.zip: not a zip file"


def test_a_damaged_central_directory_is_a_corrupt_archive():
    data = bytearray(make_zip(("a.md", NOTE)))
    cd = data.rfind(b"PK\x01\x02")
    data[cd : cd + 4] = b"XXXX"

    assert reject(bytes(data)).startswith("bundle.zip: corrupt archive")


def test_a_declared_size_smaller_than_the_data_is_a_corrupt_archive():
    data = patch_zip(make_zip(("a.md", NOTE * 10)), "a.md", file_size=10)

    assert reject(data) == (
        "bundle.zip: 1 bad entry: a.md (corrupt archive: CRC mismatch (data does not match the header))"
    )


def test_a_declared_size_larger_than_the_data_is_a_corrupt_archive():
    data = patch_zip(make_zip(("a.md", NOTE * 10)), "a.md", file_size=5000)

    assert reject(data) == "bundle.zip: 1 bad entry: a.md (corrupt archive: smaller than declared)"


def test_a_lying_compressed_size_is_a_corrupt_archive():
    data = patch_zip(make_zip(("a.md", NOTE * 10), ("b.md", NOTE)), "a.md", compress_size=5)

    assert "a.md (corrupt archive" in reject(data)


def test_flipped_data_bytes_are_a_corrupt_archive():
    data = bytearray(make_zip(("a.md", NOTE * 20), deflate=False))
    data[60] ^= 0xFF

    assert "a.md (corrupt archive: CRC mismatch" in reject(bytes(data))


def test_a_name_flagged_utf8_that_is_not_utf8_is_a_corrupt_archive():
    data = make_zip(("caf\u00e9.md", NOTE))
    data = data.replace("caf\u00e9".encode(), b"caf\xc3\x28")

    assert reject(data) == "bundle.zip: corrupt archive"


def test_a_local_header_name_that_differs_from_the_directory_is_corrupt():
    data = make_zip(("a.md", NOTE))
    first = data.index(b"a.md")  # the local header's copy comes first
    data = data[:first] + b"z.md" + data[first + 4 :]

    assert "local header name differs" in reject(data)


def test_overlapping_entries_are_a_possible_zip_bomb():
    data = make_zip(("a.md", NOTE), ("b.md", NOTE))
    overlapped = patch_zip(data, "b.md", header_offset=header_offset(data, "a.md"))

    assert reject(overlapped) == (
        "bundle.zip: 1 bad entry: b.md (possible zip bomb (overlapping entries))"
    )


def test_compressed_data_running_over_the_next_header_is_a_possible_zip_bomb():
    # The shape of a quoted-overlap bomb: one entry's data span covers the next header.
    data = make_zip(("a.md", NOTE), ("b.md", NOTE), ("c.md", NOTE))
    # a.md's data now ends exactly where c.md's header starts: b.md sits inside it.
    stretch = header_offset(data, "c.md") - header_offset(data, "a.md") - 30 - len("a.md")
    overlapped = patch_zip(data, "a.md", compress_size=stretch)

    message = reject(overlapped)

    assert "b.md (possible zip bomb (overlapping entries))" in message
    assert "c.md (possible zip bomb (overlapping entries))" not in message


def test_pythons_own_overlap_error_maps_to_possible_zip_bomb():
    from llmwiki.archives import _bad_zip_reason

    exc = zipfile.BadZipFile("Overlapped entries: 'b.md' (possible zip bomb)")

    assert _bad_zip_reason(exc) == "possible zip bomb (overlapped entries)"
    assert _bad_zip_reason(zlib.error("invalid stored block lengths")).startswith("corrupt archive")


def test_unsupported_compression_methods_are_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_BZIP2) as zf:
        zf.writestr("a.md", NOTE)

    assert reject(buf.getvalue()) == (
        "bundle.zip: 1 bad entry: a.md (compression method 12 not supported)"
    )


# ------------------------------------------------------------------------------ read_zip_texts


def test_a_binary_member_is_named_with_the_zip():
    data = make_zip(("ok.md", NOTE), ("pic.md", b"\x89PNG\r\n\x1a\n\x00\x00"))

    with pytest.raises(InputError) as exc_info:
        read_zip_texts("bundle.zip", data)

    assert exc_info.value.name == "bundle.zip!pic.md"
    assert str(exc_info.value) == "bundle.zip!pic.md: binary file (NUL bytes)"


def test_an_invalid_utf8_member_is_named_with_the_zip():
    data = make_zip(("latin.md", "caf\u00e9".encode("latin-1")))

    with pytest.raises(
        InputError, match=r"^bundle.zip!latin.md: not valid UTF-8 \(byte 0xe9 at offset 3\)$"
    ):
        read_zip_texts("bundle.zip", data)


def test_several_bad_members_are_listed_together():
    data = make_zip(("a.md", b"\x00"), ("b.md", b"\xff"), ("c.md", NOTE))

    with pytest.raises(InputError) as exc_info:
        read_zip_texts("bundle.zip", data)

    assert str(exc_info.value) == (
        "bundle.zip: 2 bad entries: a.md (binary file (NUL bytes)); "
        "b.md (not valid UTF-8 (byte 0xff at offset 0))"
    )


def test_a_member_over_the_text_limit_is_refused_by_the_text_decoder():
    data = make_zip(("a.md", bytes(range(32, 127)) * 20))
    limits = Limits(max_file_bytes=1000)

    with pytest.raises(
        InputError, match=r"^bundle.zip!a.md: file is 1.9 KB, over the 1000 bytes limit$"
    ):
        read_zip_texts("bundle.zip", data, limits)


def test_errors_listing_is_capped():
    data = make_zip(*[(f"../x{i}.md", NOTE) for i in range(30)])

    message = reject(data)

    assert message.startswith("bundle.zip: 30 bad entries: ../x0.md (path traversal);")
    assert message.endswith("; … and 10 more")
