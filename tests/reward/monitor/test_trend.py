"""The hacks/* metrics and the rising-rate warning (codegrpo.reward.monitor.trend)."""

from __future__ import annotations

import pytest

from codegrpo.reward.monitor import CATEGORIES, HackTrend, hack_metrics
from codegrpo.reward.monitor.trend import warn


def test_hack_metrics_and_the_rising_rate_warning():
    assert hack_metrics([]) == {"hacks/any": 0.0, "hacks/count": 0.0, **{f"hacks/{c}": 0.0 for c in CATEGORIES}}
    trend = HackTrend(window=3, rise=0.05)
    messages = [trend.update(rate) for rate in [0.0, 0.0, 0.0, 0.0, 0.2, 0.4, 0.5, 0.5]]
    assert [m is not None for m in messages] == [False] * 5 + [True, False, False]
    assert "rising" in messages[5]


def test_hack_metrics_are_the_fractions_flagged_and_the_count():
    metrics = hack_metrics([(), ("exit",), ("exit", "network"), ()])
    assert metrics["hacks/any"] == 0.5 and metrics["hacks/count"] == 2.0
    assert metrics["hacks/exit"] == 0.5 and metrics["hacks/network"] == 0.25 and metrics["hacks/patch"] == 0.0
    assert set(metrics) == {"hacks/any", "hacks/count", *(f"hacks/{c}" for c in CATEGORIES)}


def test_every_completion_flagged():
    assert hack_metrics([("hardcode",)]) == {
        "hacks/any": 1.0,
        "hacks/count": 1.0,
        **{f"hacks/{c}": float(c == "hardcode") for c in CATEGORIES},
    }


def _updates(trend: HackTrend, rates: list[float]) -> list[bool]:
    return [trend.update(rate) is not None for rate in rates]


def test_no_warning_before_two_windows_of_batches():
    assert _updates(HackTrend(window=2, rise=0.05), [0.0, 0.0, 0.0]) == [False] * 3
    assert _updates(HackTrend(window=2, rise=0.05), [0.0, 0.0, 0.0, 0.2]) == [False] * 3 + [True]


def test_the_rise_is_compared_with_the_window_before():
    # window 2: before = mean of the two older rates, now = mean of the two newer ones.
    assert _updates(HackTrend(window=2, rise=0.1), [0.0, 0.0, 0.1, 0.1]) == [False] * 3 + [True]  # a rise of 0.1
    assert _updates(HackTrend(window=2, rise=0.1), [0.0, 0.0, 0.1, 0.09]) == [False] * 4  # a rise under 0.1


def test_the_rate_must_also_double():
    assert _updates(HackTrend(window=1, rise=0.05), [0.2, 0.4]) == [False, True]  # doubled
    assert _updates(HackTrend(window=1, rise=0.05), [0.3, 0.5]) == [False, False]  # risen 0.2, not doubled


def test_the_window_slides_over_the_last_batches():
    assert _updates(HackTrend(window=1, rise=0.05), [0.5, 0.0, 0.2]) == [False, False, True]


def test_it_warns_once_and_again_only_after_the_rate_fell_back():
    trend = HackTrend(window=1, rise=0.05)
    assert _updates(trend, [0.0, 0.2, 0.5, 0.5, 0.3, 0.3, 0.7]) == [False, True, False, False, False, False, True]


def test_a_level_rate_after_a_warning_rearms_it():
    trend = HackTrend(window=1, rise=0.05)
    assert _updates(trend, [0.0, 0.2, 0.2, 0.5]) == [False, True, False, True]


def test_the_warning_names_both_rates_and_the_window():
    trend = HackTrend(window=1, rise=0.05)
    trend.update(0.1)
    message = trend.update(0.25)
    assert message == (
        "reward hacking is rising: 25.0% of completions flagged over the last 1 batches, 10.0% over the 1 before "
        "(hacks/* in the logs)"
    )


def test_warn_writes_a_warning_line_on_stderr(capsys):
    warn("reward hacking is rising")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "warning: reward hacking is rising\n")


@pytest.mark.parametrize(("window", "rise"), [(10, 0.05), (3, 0.2)])
def test_the_defaults_and_settings_are_kept(window, rise):
    trend = HackTrend(window, rise)
    assert (trend.window, trend.rise, trend.rates.maxlen, trend.warned) == (window, rise, 2 * window, False)
    assert HackTrend().window == 10 and HackTrend().rise == 0.05
