"""Hostile values, by the kind of option they are given to, each marked with whether every
option of that kind must refuse it."""

from __future__ import annotations

from hypothesis import strategies as st

# (value, must be refused). Numbers: non-finite, negative, beyond 64 bits and beyond float
# range are never a count, a size, a rate or a time; zero, one and huge finite values may be
# accepted, but then the answer must be finite and physically possible.
NUMBER_VALUES: list[tuple[str, bool]] = [
    ("nan", True), ("inf", True), ("-inf", True), ("-1", True), ("1e400", True),
    ("18446744073709551617", True), ("-9223372036854775809", True),
    ("0", False), ("1", False), ("1e30", False), ("4294967296", False), ("1e-300", False),
    ("", True), ("ten", True), ("1,000", True), ("٣", False),
]
INT_ONLY_REFUSED = {"1e30", "1e-300"}  # not integers: typer must refuse them for an int

# Strings: an empty or unknown value is never an id, a choice or a mode.
STRING_VALUES: list[tuple[str, bool]] = [
    ("", True), ("no-such-id-\u00fc\u00df", True), ("../../../../etc/passwd", True),
    ("x" * 5000, True), ("<script>alert(1)</script>", True), ("nan", True), ("-1", True),
    ("H100-SXM ", True), ("\u202eevil", True),
]
# Free text where any string is a legitimate value (still: no crash, exit 0 or 2).
FREE_TEXT = {"runs save-scenario --name", "runs list --scenario"}

# Files no command may read as input: unbounded, blocking, not a file, or not there.
SPECIAL_INPUTS = ["/dev/zero", "/dev/urandom", "/nonexistent/dir/x.yaml", "{tmp}",
                  "{tmp}/fifo", "{tmp}/loop", ""]
# Places no command may write its output or database to.
SPECIAL_OUTPUTS = ["/dev/null", "/dev/zero", "/proc/self/x", "", "{tmp}/a-file",
                   "{tmp}/a-file/sub"]


def numbers() -> st.SearchStrategy[str]:
    """Any number as a user could type it: integers across 128 bits, every float including
    the non-finite ones, and the spellings a shell passes through."""
    return st.one_of(
        st.integers(min_value=-(2**128), max_value=2**128).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["1e309", "-0", "0.0", "+5", "5.", ".5", "0x10", "1_000", "1e-400"]),
    )


def strings() -> st.SearchStrategy[str]:
    """Any text, including control and right-to-left characters, and id look-alikes."""
    return st.one_of(
        st.text(max_size=200).filter(lambda s: "\x00" not in s),
        st.sampled_from(["h100", "h100-sxm\n", "dgx-h100;rm -rf /", "%s%s%n", "${HOME}",
                         "llama-3.1-8b" * 50, "ＤＧＸ"]),
    )
