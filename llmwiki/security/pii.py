"""PII detection: e-mail addresses, phone and card numbers, IBANs, street addresses.

The number and IBAN detectors sit behind a byte-level prefilter on ASCII text, so text
without the right shape of digits or capitals never reaches their regexes; the e-mail and
street-address patterns open with a literal "@" or a digit, which the engine skips to.
What the regexes find is then checked by libraries that know every country's rules:
libphonenumber (phonenumbers) for phone numbers, python-stdnum for IBANs and the Luhn
check of card numbers. They run only on those few hits, never on every episode.
"""

from __future__ import annotations

import re

import phonenumbers
from stdnum import iban, luhn

__all__ = ["PHONE_REGIONS", "find_pii", "iban_ok", "luhn_ok", "phone_ok"]

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# Anchored on the "@" (a literal, so the engine skips straight to it); the local part is
# walked backwards in Python.
_EMAIL_DOMAIN = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_EMAIL_LOCAL = frozenset(_ALNUM + "._%+-")
# File names like icon@2x.png and git@github.com look like addresses but are not people.
_NOT_TLDS = frozenset(
    {"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "py", "json", "css", "html", "txt"}
)

# One pass finds every digit run that could be a phone or card number; Python classifies.
# The look-behind (after the first character, so the engine can still skip to candidate
# characters) stops matches from starting mid-token: ids, versions, decimals, emails.
_NUMBER_RUN = re.compile(
    # ASCII classes on purpose: \d and \w test Unicode categories and are markedly slower.
    r"[+(0-9](?<![A-Za-z0-9_.:/+@#-].)"
    # At least eight more digits follow: dates, times and versions never become candidates.
    r"(?=(?:[ ().-]{0,3}[0-9]){8})"
    r"[0-9 ().-]{5,32}[0-9](?![A-Za-z0-9_@:/]|[.-][0-9])"
)
_IBAN_HEAD = re.compile(r"[A-Z]{2}[0-9]{2} ")
_SEPARATORS_TO_SPACE = str.maketrans("().-+", "     ")
_IBAN = re.compile(r"[A-Z](?<![A-Za-z0-9].)[A-Z][0-9]{2}(?: ?[A-Z0-9]){11,32}")
_SHORTEST_IBAN = 15  # Norway
# Digits become "0" and separators vanish, so a run of zeros is a run of digits with
# separators between them. _NUMBER_RUN needs nine digits, or eight after "+" or "(":
# without such a run (dates have eight) the regex cannot match and is skipped.
_DIGIT_GATE = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_DIGIT_SEPARATORS = b" ().-+"
_EIGHT_DIGITS = b"0" * 8
_IBAN_GATE = bytes(
    0x41 if 0x41 <= b <= 0x5A else 0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256)
)

# National numbers (no "+" or "00") are read as numbers of these regions, most common first;
# one valid in any of them is a phone. International numbers name their own country.
PHONE_REGIONS = (
    "US", "GB", "AU", "DE", "FR", "NL", "IE", "NZ", "CA", "ES", "IT", "BE", "CH", "AT", "SE",
    "NO", "DK", "FI", "PT", "PL", "IN", "ZA", "SG", "JP", "BR", "MX",
)  # fmt: skip


# A street address: house number (or unit/number), one to four capitalised name words, a
# street-type word, then optionally a suburb and postcode. The look-behind sits after the
# first digit so the engine can still skip to digits; it keeps versions ("v1.3 Road"), ids
# and paths out. Name words are ASCII or Latin-1 capitals.
_STREET_TYPES = (
    "Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Place|Pl|Terrace|Tce|Crescent|Cres|Way"
    "|Boulevard|Blvd|Court|Ct|Close|Parade|Pde|Highway|Hwy|Grove|Square|Sq|Circuit|Cct"
    "|Esplanade|Parkway|Pkwy|Alley|Quay|Wharf|Mews|Circle|Promenade|Gardens|Pike"
)
_ADDRESS = re.compile(
    r"[0-9](?<![A-Za-z0-9_.,:/#$@+-].)[0-9]{0,4}[A-Za-z]?"
    r"(?:[ \t]*[/-][ \t]*[0-9]{1,5}[A-Za-z]?)?"  # unit/number or a range: 3/47, 12-14
    r"[ \t]+((?:[A-ZÀ-ÖØ-Þ][A-Za-zÀ-ÖØ-öø-ÿ'’.-]*[ \t]+){1,4}?)"
    rf"(?:{_STREET_TYPES}|{_STREET_TYPES.lower()})\b\.?"
)
# What may follow the street type: the end, punctuation, a suburb, a postcode or a line
# break. A lower-case word means the match was a phrase ("3 Hard Drive models") unless the
# number is introduced as a place ("meet at 12 Smith Street tomorrow").
_ADDRESS_END = re.compile(r"[ \t]*(?:$|[\n,;:)\]]|\.(?:\s|$)|[A-ZÀ-ÖØ-Þ0-9])")
_ADDRESS_LEAD = frozenset(
    {"at", "to", "address", "addr", "located", "lives", "live", "living", "resides", "reside",
     "deliver", "delivered", "delivery", "ship", "ships", "shipped", "shipping", "send", "sent",
     "visit", "from", "on", "c/o", "is", "of"}
)  # fmt: skip
# Months and weekdays make dates ("on 12 March Road works began"), not streets.
_NOT_STREET_NAMES = frozenset(
    {"January", "February", "March", "April", "May", "June", "July", "August", "September",
     "October", "November", "December", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep",
     "Sept", "Oct", "Nov", "Dec", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
     "Saturday", "Sunday", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
)  # fmt: skip


# Digits become "0", blanks " ", capitals "A" and other letters "x": an address has a
# number, maybe a letter ("221B"), blanks and a capital (ASCII text only).
_ADDRESS_GATE = bytes(
    0x30 if 0x30 <= b <= 0x39
    else 0x20 if b in (0x20, 0x09)
    else 0x41 if 0x41 <= b <= 0x5A
    else 0x78
    for b in range(256)
)  # fmt: skip
_ADDRESS_GATE_RUN = re.compile(rb"0[Ax]? +A")


def _has_address(text: str, raw: bytes | None) -> bool:
    if raw is not None and not _ADDRESS_GATE_RUN.search(raw.translate(_ADDRESS_GATE)):
        return False
    for m in _ADDRESS.finditer(text):
        names = m.group(1).split()
        if names[0].rstrip(".,") in _NOT_STREET_NAMES:
            continue
        if _ADDRESS_END.match(text, m.end()):
            return True
        before = text[max(0, m.start() - 30) : m.start()].split()
        if before and before[-1].lower().rstrip(":") in _ADDRESS_LEAD:
            return True
    return False


def luhn_ok(digits: str) -> bool:
    """Return whether a string of digits passes the Luhn checksum."""
    return luhn.is_valid(digits)


def iban_ok(candidate: str) -> bool:
    """Return whether ``candidate`` (spaces allowed) is an IBAN: its country's length and
    layout, and a valid mod-97 check."""
    return iban.is_valid(candidate)


def phone_ok(run: str) -> bool:
    """Return whether libphonenumber reads ``run`` as a phone number.

    A number with a country code ("+" or "00") needs a code in use and a length that
    country dials; numbers in its fiction ranges (UK 07700 900…, France 06 39 98…) count,
    as people write them too. A national number could be any country's, so it must be a
    valid number of one of PHONE_REGIONS.
    """
    if run.lstrip("(").startswith("00"):
        run = run.replace("00", "+", 1)  # the international call prefix of most countries
    if run.lstrip("(").startswith("+"):
        try:
            return phonenumbers.is_possible_number(phonenumbers.parse(run))
        except phonenumbers.NumberParseException:
            return False
    for region in PHONE_REGIONS:
        try:
            if phonenumbers.is_valid_number(phonenumbers.parse(run, region)):
                return True
        except phonenumbers.NumberParseException:
            continue
    return False


def _classify_number(run: str) -> str | None:
    groups = run.translate(_SEPARATORS_TO_SPACE).split()
    digits = "".join(groups)
    n = len(digits)
    odd = "(" in run or ")" in run or "." in run or "+" in run
    card_shaped = 13 <= n <= 19 and not odd and digits[0] in "23456"
    if card_shaped and digits.count(digits[0]) != n and luhn_ok(digits):
        return "pii:card"
    international = run.startswith(("+", "(+"))
    if run.count("+") > international:
        return None
    if international:
        return "pii:phone" if 8 <= n <= 15 and phone_ok(run) else None
    if run.isdigit():
        # A bare digit string is far more often an id, count or timestamp than a phone.
        return None
    sizes = list(map(len, groups))
    if "." in run:
        if len(sizes) == 4 and max(sizes) <= 3:
            return None  # an IPv4 address
        if min(sizes) < 2 or max(sizes) > 4:
            return None  # decimals and version strings
    if max(sizes) > 8:
        return None
    plausible = (run.startswith("00") and 10 <= n <= 15) or 10 <= n <= 11
    return "pii:phone" if plausible and phone_ok(run) else None


def _has_email(text: str) -> bool:
    for m in _EMAIL_DOMAIN.finditer(text):
        at = m.start()
        i = at
        while i > 0 and at - i <= 64 and text[i - 1] in _EMAIL_LOCAL:
            i -= 1
        local = text[i:at]
        if not local or at - i > 64 or not local[0].isalnum() or local == "git":
            continue
        tld = m.group().rsplit(".", 1)[-1]
        if tld.isalpha() and len(tld) >= 2 and tld.lower() not in _NOT_TLDS:
            return True
    return False


def find_pii(text: str, raw: bytes | None) -> tuple[str, ...]:
    found: set[str] = set()
    if "@" in text and _has_email(text):
        found.add("pii:email")
    if raw is None:
        numbers = True
    else:
        digits = raw.translate(_DIGIT_GATE, _DIGIT_SEPARATORS)
        numbers = _EIGHT_DIGITS in digits and (
            _EIGHT_DIGITS + b"0" in digits or b"+" in raw or b"(" in raw
        )
    if numbers:
        for m in _NUMBER_RUN.finditer(text):
            start = m.start()
            if start >= 5 and _IBAN_HEAD.fullmatch(text, start - 5, start):
                continue  # the digits of an IBAN's account part, judged as an IBAN below
            flag = _classify_number(m.group())
            if flag:
                found.add(flag)
                if "pii:card" in found and "pii:phone" in found:
                    break
    if _has_address(text, raw):
        found.add("pii:address")
    if raw is not None and b"AA00" not in raw.translate(_IBAN_GATE):
        return tuple(sorted(found))
    for m in _IBAN.finditer(text):
        compact = m.group().replace(" ", "")
        # The match may run on into a following code ("... 0130 00 AB12"): each country has
        # one length, so at most one prefix can be valid.
        if any(iban_ok(compact[:n]) for n in range(len(compact), _SHORTEST_IBAN - 1, -1)):
            found.add("pii:iban")
            break
    return tuple(sorted(found))
