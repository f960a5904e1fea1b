"""What a transcription server writes is read as the assignment said: Whisper-like
recognisers write numbers in digits, in the way people write them down after hearing."""

from __future__ import annotations

import pytest

from riddlectl.handlers.builtin.speech.endpoint import heard_assignment


@pytest.mark.parametrize(
    ("written", "value"),
    [
        ("z equals 104.", "104"),
        ("Z equals 100 and 4.", "104"),  # "one hundred and four", written as heard
        ("z is 1,000 and 20.", "1020"),
        ("z equals 2,300 and 5.", "2305"),
        ("z equals 2 hundred and 5.", "205"),
        ("z equals to 20.", "20"),
        ("z equal to six hundred and twenty six.", "626"),  # the "is" not heard
        ("Z equal to 57.3.", "57.3"),
        ("z is equal to fifty.", "50"),
        ("Zed equals minus 12.", "-12"),
        ("z equals twenty. Z equals 20.", "20"),  # the same said twice is heard once
    ],
)
def test_a_transcription_is_read_as_the_assignment_said(written: str, value: str) -> None:
    heard = heard_assignment(written, ("z",))
    assert heard is not None, written
    assert heard["variables"] == {"z": value}


@pytest.mark.parametrize(
    "written",
    [
        "z equals 20 and 4.",  # no place for 4 in 20: two numbers, not one
        "z equals 104 and 5.",
        "z equals 100 and 100.",
        "z is 20. z equals 21.",  # a recogniser that loops heard nothing sure
        "the weather is fine.",
    ],
)
def test_what_is_not_one_number_is_not_heard(written: str) -> None:
    assert heard_assignment(written, ("z",)) is None
