"""Tests for street addresses as PII (llmwiki.security.pii)."""

from __future__ import annotations

import pytest

from llmwiki.security import scan


@pytest.mark.parametrize(
    "text",
    [
        "The spare parts ship to the site office at 18 Kowhai Valley Road, Renwick 7204.",
        "Send the samples to 12 Smith St, Fitzroy VIC 3065.",
        "Her flat is 3/47 Ocean View Terrace, Bondi.",
        "Meet at 221B Baker Street tomorrow morning.",
        "Office: 1600 Pennsylvania Avenue NW, Washington, DC 20500",
        "Deliveries go to 12-14 Old Mill Lane.",
        "The depot moved to 5 Harbour Quay",
        "lives at 9 St Kilda Road Melbourne",
        "Courier: 77 Ridge Drive. Leave at the gate.",
        "Billing address\n4 Wattle Crescent\nAlbury NSW 2640",
    ],
)
def test_it_flags_street_addresses(text):
    result = scan(text)

    assert "pii:address" in result.pii
    assert result.security_class == "restricted"


@pytest.mark.parametrize(
    "text",
    [
        "We ran 3 Road tests yesterday.",
        "the 2 Abbey Road sessions were remastered",
        "We tested 3 Hard Drive models.",
        "Upgrade to v1.3 Road map next week.",
        "on 12 March Road works began",
        "Python 3 St",
        "Step 3 Drive the truck to the depot.",
        "a 4 Lane Highway was built",
        "See section 4.2 Main Street in the design doc.",
        "Ticket #45 Main Street lights",
        "We need 2 Senior Engineers to review.",
        "Release 2.4.1 Way faster imports",
    ],
)
def test_it_does_not_flag_phrases_that_only_look_like_addresses(text):
    assert "pii:address" not in scan(text).pii
