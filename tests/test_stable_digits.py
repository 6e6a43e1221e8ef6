"""Every rounded float that §2, §3 and §5 print sits far from a rounding boundary.

Another BLAS kernel, thread count or SIMD loop changes a float64 result in its last bits (relative
1e-16 … 1e-13). A printed digit can then only flip if the value lies that close to the midpoint
between two printed values; these tests require a margin a million times larger, so the stored
outputs hold on every machine. (The variant runs in test_offline.py check the same on this machine.)
"""

from __future__ import annotations

import math

import pytest

from lesson_lib.head_stats import mean_pairwise_js
from lesson_lib.sections import s02_averaging as averaging
from lesson_lib.sections import s03_heads as heads
from lesson_lib.sections import s05_head_lab as head_lab

MARGIN = 1e-7  # in units of the last printed digit


def distance_to_rounding_boundary(value: float, decimals: int) -> float:
    """How far ``value`` is from the nearest midpoint where rounding to ``decimals`` flips, in last-digit units."""
    scaled = value * 10**decimals
    return abs(scaled - math.floor(scaled) - 0.5)


def test_distance_helper_can_fail():
    assert distance_to_rounding_boundary(0.125, 2) == pytest.approx(0.0, abs=1e-9)
    assert distance_to_rounding_boundary(0.12, 2) == pytest.approx(0.5, abs=1e-9)


@pytest.mark.parametrize("n_heads", [1, 2])
def test_averaging_demo_digits_are_stable(n_heads):
    d = averaging.demo(n_heads, sharpness=4.0)  # the sharpness §2 prints
    for value in [*d.weights.ravel()[: averaging.QUERY], d.referent_kept, d.subject_kept]:
        assert distance_to_rounding_boundary(float(value), 2) > MARGIN, value
    for value in averaging.blend(averaging.LESSON_WEIGHTS).values():
        assert distance_to_rounding_boundary(value, 1) > MARGIN, value


@pytest.mark.parametrize("h", [1, 2, 8, 32, 64])
def test_head_lab_digits_are_stable(h):
    s = head_lab.lab_state(h)  # §5's table prints the entropy, the h = 8 reading the JS divergence
    assert distance_to_rounding_boundary(s.mean_entropy_bits, 2) > MARGIN, s.mean_entropy_bits
    if h > 1:
        js = mean_pairwise_js(s.weights)
        assert distance_to_rounding_boundary(js, 2) > MARGIN, js


def test_heads_mix_digits_are_stable():
    check = heads.heads_mix_only_at_wo(n=5, d_model=512, h=8)  # §3's call
    assert distance_to_rounding_boundary(check["others_change"], 2) > MARGIN
    assert check["max_difference"] < heads.ROUNDOFF / 100  # printed as a bound: far below it


def test_order_digits_are_stable():
    check = heads.order_and_position(n=6, d_model=512, h=8)  # §3's call
    assert distance_to_rounding_boundary(check["with_position"], 2) > MARGIN
    assert check["without_position"] < heads.ROUNDOFF / 100  # printed as a bound: far below it
