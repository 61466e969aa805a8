"""The comparison statistics (``quiclab.stats.paired``/``unpaired``/``holm``/
``bootstrap_mean_ci``, the numbers of ``comparisons.csv`` and ``quiclab compare``) against scipy
on fixed data sets: small samples (exact distributions), ties and zero differences
(permutation or normal approximation, as scipy's default ``method`` picks), large samples."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

import quiclab.stats as qs

REL = 1e-9


def _rng_data(seed: int, n: int, scale: float = 1.0) -> np.ndarray:
    return np.round(np.random.default_rng(seed).normal(10.0, scale, n), 6)


# (variant, baseline) pairs: what scipy's wilcoxon does with each is in the comment.
PAIRED_SETS = {
    # n = 8, no ties, no zeros: exact distribution.
    "small_exact": (
        [10.9, 10.1, 11.0, 10.2, 10.4, 10.6, 11.2, 10.0],
        [10.1, 9.8, 10.4, 10.0, 9.7, 10.2, 10.3, 9.9],
    ),
    # Tied |differences| (1, 1, 2, 2), n = 6: exact permutation of the signs.
    "small_ties": ([2.0, 3.0, 5.0, 1.0, 7.0, 4.0], [1.0, 4.0, 3.0, 3.0, 4.0, 4.5]),
    # Zero differences (two of seven): dropped, permutation of the remaining signs.
    "small_zeros": (
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
        [1.0, 2.5, 3.0, 2.0, 4.0, 5.5, 3.0],
    ),
    # n = 20 with zeros and ties: normal approximation with the tie correction.
    "medium_zeros_ties": (
        [float(x) for x in [5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9, 5, 6, 7, 8, 9]],
        [float(x) for x in [5, 5, 6, 6, 7, 4, 6, 8, 7, 7, 4, 6, 5, 9, 8, 5, 3, 6, 7, 10]],
    ),
    # n = 60, continuous: normal approximation (more than 50).
    "large": (list(_rng_data(1, 60) + 0.3), list(_rng_data(2, 60))),
    # n = 30, continuous, no ties: exact (at most 50).
    "medium_exact": (list(_rng_data(3, 30) + 0.5), list(_rng_data(4, 30))),
}


@pytest.mark.parametrize("name", sorted(PAIRED_SETS))
def test_paired_matches_scipy(name: str) -> None:
    v, b = (np.array(x) for x in PAIRED_SETS[name])
    got = qs.paired(v, b)
    d = v - b
    assert got["n"] == len(d)
    assert got["diff"] == pytest.approx(d.mean(), rel=REL)
    t = stats.ttest_rel(v, b)
    assert got["p_t"] == pytest.approx(t.pvalue, rel=REL)
    ci = t.confidence_interval()
    assert got["diff_low"] == pytest.approx(ci.low, rel=REL)
    assert got["diff_high"] == pytest.approx(ci.high, rel=REL)
    # wilcoxon on the differences, as the Warning in scipy's docs recommends.
    assert got["p_wilcoxon"] == pytest.approx(stats.wilcoxon(d).pvalue, rel=REL)
    assert got["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=REL)
    assert got["ratio"] == pytest.approx(v.mean() / b.mean(), rel=REL)
    assert got["ratio_low"] <= got["ratio"] <= got["ratio_high"]


def test_a_constant_difference_and_no_difference_follow_scipy() -> None:
    # ttest_rel: t = inf, p = 0 for a constant non-zero difference; nan (absent) for none.
    got = qs.paired([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert got["p_t"] == stats.ttest_rel([2.0, 3.0, 4.0], [1.0, 2.0, 3.0]).pvalue == 0.0
    assert got["diff_low"] is None and got["effect_size"] is None
    same = qs.paired([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert math.isnan(stats.ttest_rel([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).pvalue)
    assert same["p_t"] is None
    # All differences zero, n ≤ 13: scipy's permutation test gives 1.
    assert same["p_wilcoxon"] == stats.wilcoxon([0.0, 0.0, 0.0]).pvalue == 1.0


def test_one_pair_has_no_interval_and_no_test() -> None:
    got = qs.paired([2.0], [1.0])
    assert got["diff"] == 1.0
    for key in ("diff_low", "diff_high", "ratio_low", "p_t", "p_wilcoxon", "effect_size"):
        assert got[key] is None, key


UNPAIRED_SETS = {
    # Both at most 8, no ties: exact distribution of U.
    "small_exact": ([1.2, 3.4, 2.3, 5.1, 4.4], [2.0, 2.5, 1.9, 2.2, 2.8, 2.1, 2.4]),
    # A tie across the samples: normal approximation.
    "small_ties": ([1.0, 2.0, 2.0, 3.0, 7.0], [2.0, 4.0, 5.0, 6.0]),
    # One small and one large sample, no ties: exact (one of them has at most 8).
    "lopsided_exact": ([9.1, 10.7, 11.3], list(_rng_data(5, 40))),
    # Both larger than 8: normal approximation.
    "large": (list(_rng_data(6, 25, 2.0) + 1.0), list(_rng_data(7, 30))),
}


@pytest.mark.parametrize("name", sorted(UNPAIRED_SETS))
def test_unpaired_matches_scipy(name: str) -> None:
    a, b = (np.array(x) for x in UNPAIRED_SETS[name])
    got = qs.unpaired(a, b)
    assert (got["n_a"], got["n_b"]) == (len(a), len(b))
    t = stats.ttest_ind(a, b, equal_var=False)
    assert got["p_welch"] == pytest.approx(t.pvalue, rel=REL)
    ci = t.confidence_interval()
    assert got["diff_low"] == pytest.approx(ci.low, rel=REL)
    assert got["diff_high"] == pytest.approx(ci.high, rel=REL)
    assert got["p_mann_whitney"] == pytest.approx(stats.mannwhitneyu(a, b).pvalue, rel=REL)
    # Hedges' g with the exact correction J = Γ(ν/2) / (√(ν/2) Γ((ν−1)/2)).
    nu = len(a) + len(b) - 2
    pooled = math.sqrt(((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / nu)
    j = special.gamma(nu / 2) / (math.sqrt(nu / 2) * special.gamma((nu - 1) / 2))
    assert got["effect_size"] == pytest.approx(j * (a.mean() - b.mean()) / pooled, rel=1e-9)


def test_holm_matches_the_step_down_rule() -> None:
    # Sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 → 0.06 (monotone).
    got = qs.holm([0.01, 0.04, 0.03, 0.005, None])
    want = [0.03, 0.06, 0.06, 0.02]
    assert got[:4] == pytest.approx(want, rel=1e-12)
    assert got[4] is None


def test_bootstrap_interval_is_seeded_and_agrees_with_scipy_percentile() -> None:
    values = list(_rng_data(8, 40, 3.0))
    ci = qs.bootstrap_mean_ci(values)
    assert ci == qs.bootstrap_mean_ci(values)
    assert ci != qs.bootstrap_mean_ci(values, seed=1)
    ref = stats.bootstrap(
        (np.array(values),),
        np.mean,
        method="percentile",
        n_resamples=20_000,
        rng=np.random.default_rng(0),
    ).confidence_interval
    # Different random streams: the ends agree to within the Monte Carlo error of 2,000
    # resamples (a few per cent of the interval's width).
    width = ref.high - ref.low
    assert abs(ci[0] - ref.low) < 0.08 * width
    assert abs(ci[1] - ref.high) < 0.08 * width
    assert qs.bootstrap_mean_ci([1.0]) is None


def test_a_variant_sweep_writes_comparisons_and_compare_pairs_them(tmp) -> None:
    import csv

    import quiclab
    from conftest import SMALL

    text = SMALL + (
        '\n[[variant]]\nname = "cubic"\n\n'
        '[[variant]]\nname = "reno"\nset = { "flow.0.cc" = "newreno" }\n'
    )
    out = tmp / "v"
    res = quiclab.loads(text, name="v.toml", reps=3).sweep(str(out))
    with open(out / "comparisons.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    goodput = [r for r in rows if r["metric"] == "flows.0.goodput_bps"]
    assert [(r["variant"], r["baseline"], r["n_pairs"]) for r in goodput] == [
        ("reno", "cubic", "3")
    ]
    df = quiclab.compare([out], "flows.0.goodput_bps", baseline="cubic").paired_df
    assert len(df) == 1 and df.loc[0, "variant"] == "reno"
    # The file, compare and quiclab.stats.paired over the runs are one computation.
    assert df.loc[0, "diff"] == pytest.approx(float(goodput[0]["diff"]), rel=1e-12)
    quic = res.df[res.df["flow"] == "quic"].sort_values("rep")
    v = quic[quic["variant"] == "reno"]["goodput_bps"].to_numpy()
    b = quic[quic["variant"] == "cubic"]["goodput_bps"].to_numpy()
    assert df.loc[0, "diff"] == pytest.approx(qs.paired(v, b)["diff"], rel=1e-12)
