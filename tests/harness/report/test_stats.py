"""``fixtures.report.tables.stats`` against published values (the intervals and tests are scipy's)."""

from __future__ import annotations

import math

import pytest

from fixtures.report.tables.stats import (
    ci95,
    mcnemar_exact,
    paired_interval,
    t_interval,
    t_quantile,
    wilson_interval,
)


# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
# Medicine 17: Table I, method 3 (Wilson score interval without continuity correction)
@pytest.mark.parametrize(
    "k,n,low,high",
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_matches_newcombe_table(k: int, n: int, low: float, high: float) -> None:
    assert wilson_interval(k, n) == pytest.approx((low, high), abs=5e-5)


def test_wilson_other_confidence_levels_use_their_own_quantile() -> None:
    z = 2.5758293035489004  # the 0.995 quantile of the standard normal
    p, n = 4 / 7, 7
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(4, n, confidence=0.99) == pytest.approx((centre - half, centre + half))
    assert wilson_interval(4.0, n) == wilson_interval(4, n)  # a sum of 0/1 scores is a float


def test_wilson_is_scipys_wilson_interval() -> None:
    from scipy.stats import binomtest

    for n in (1, 2, 3, 7, 24, 27, 100, 369):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            for confidence in (0.9, 0.95, 0.99):
                ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
                assert wilson_interval(k, n, confidence) == pytest.approx(
                    (ci.low, ci.high), abs=1e-12
                ), (k, n, confidence)
    with pytest.raises(ValueError, match="confidence=1.0"):
        wilson_interval(1, 2, confidence=1.0)


@pytest.mark.parametrize(
    "k,n,needle",
    [(2.5, 7, "successes=2.5"), (8, 7, "successes=8"), (-1, 7, "successes=-1"), (0, 0, "n=0")],
)
def test_wilson_rejects_bad_counts_naming_them(k: float, n: int, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        wilson_interval(k, n)


def test_t_quantile_symmetry_and_bad_arguments() -> None:
    assert t_quantile(0.025, 9) == pytest.approx(-2.2622, abs=1e-4)
    assert t_quantile(0.5, 4) == pytest.approx(0.0, abs=1e-12)
    for p, df in [(0.0, 3), (1.0, 3), (0.9, 0)]:
        with pytest.raises(ValueError, match=f"p={p}, df={df}"):
            t_quantile(p, df)


def test_t_interval_of_equal_values_is_a_point_and_needs_two_values() -> None:
    assert t_interval([0.25, 0.25, 0.25]) == (0.25, 0.25)
    assert paired_interval([-1.0, -1.0]) == (-1.0, -1.0)
    with pytest.raises(ValueError, match="got 1"):
        t_interval([0.5])


def test_t_interval_99_percent() -> None:
    # 0.2, 0.4, 0.6, 0.8: mean 0.5, s/sqrt(n) = sqrt(0.2/3)/2, t(0.995, 3) = 5.840909 (t table)
    half = 5.840909 * math.sqrt(0.2 / 3) / 2
    assert t_interval([0.2, 0.4, 0.6, 0.8], 0.99) == pytest.approx(
        (0.5 - half, 0.5 + half), abs=1e-6
    )


def test_ci95_clips_fractional_scores_to_the_unit_interval() -> None:
    lo, hi = ci95([0.0, 0.1, 0.2, 0.1, 0.05])  # type: ignore[misc]
    assert lo == 0.0 and 0.09 < hi < 0.2  # mean 0.09: the raw interval starts below 0
    lo, hi = ci95([2.0, 3.0, 5.0])  # type: ignore[misc]  # not scores in [0, 1]: not clipped
    assert lo < 0.0 and hi > 5.0


def test_mcnemar_symmetry_and_bad_counts() -> None:
    assert mcnemar_exact(3, 11) == mcnemar_exact(11, 3)
    assert mcnemar_exact(3, 11) == pytest.approx(
        2 * sum(math.comb(14, i) for i in range(4)) / 2**14
    )
    with pytest.raises(ValueError, match="b=-1"):
        mcnemar_exact(-1, 2)
