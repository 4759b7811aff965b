"""The step's clock (codegrpo.training.timing): each second booked to the innermost open phase, the rest to other, and
each lap the timing/* metrics of one logged step."""

from __future__ import annotations

import pytest

from codegrpo.training import timing


def ticking(*ticks: float) -> timing.Clock:
    """A clock that reads ``ticks`` in turn: the first at its start."""
    return timing.Clock(now=iter(ticks).__next__)


def idle(step: float, **booked: float) -> dict[str, float]:
    """The metrics of a step of ``step`` seconds with ``booked`` seconds per phase and no tokens."""
    seconds = {phase: booked.get(phase, 0.0) for phase in timing.PHASES}
    return {f"timing/{phase}_s": value for phase, value in seconds.items()} | {
        "timing/other_s": step - sum(seconds.values()),
        "timing/step_s": step,
    }


def test_the_clock_books_each_second_to_the_innermost_phase_and_the_rest_to_other():
    from codegrpo.training.timing import Clock

    ticks = iter(
        [
            0.0,  # start
            1.0,
            2.0,  # update from 1: generation from 2 (update paused)
            3.0,
            5.0,  # reward inside generation from 3 to 5 (generation paused: rollout=feedback's public tests)
            6.0,  # generation ends
            6.5,
            7.5,
            8.0,  # a reward inside the update from 6.5 to 7.5, then the update ends
            8.5,
            9.0,
            10.0,
        ]
    )  # the optimizer's step (update) from 8.5 to 9; the step logged at 10
    clock = Clock(now=lambda: next(ticks))
    clock.enter("update")
    with clock.phase("generation"), clock.phase("reward"):  # the reward inside the generation
        pass
    clock.generated(300)
    with clock.phase("reward"):
        pass
    clock.exit("update")
    with clock.phase("update"):
        pass
    metrics = clock.lap()
    # update 1-2, 6-6.5, 7.5-8, 8.5-9; generation 2-3, 5-6; reward 3-5, 6.5-7.5; other 0-1, 8-8.5, 9-10.
    assert metrics == {
        "timing/generation_s": 2.0,
        "timing/reward_s": 3.0,
        "timing/update_s": 2.5,
        "timing/save_s": 0.0,
        "timing/other_s": 2.5,
        "timing/step_s": 10.0,
        "timing/tokens_per_s": 150.0,
    }
    # The next step starts at the lap, with nothing booked yet (no generation: no tokens_per_s).
    assert Clock(now=iter([0.0, 4.0]).__next__).lap() == {
        "timing/generation_s": 0.0,
        "timing/reward_s": 0.0,
        "timing/update_s": 0.0,
        "timing/save_s": 0.0,
        "timing/other_s": 4.0,
        "timing/step_s": 4.0,
    }


def test_an_unknown_phase_is_refused_and_names_the_phases():
    clock = ticking(0.0, 2.0)
    with pytest.raises(ValueError, match=r"unknown phase 'eval': one of generation, reward, update, save"):
        clock.enter("eval")
    assert clock.lap() == idle(2.0)  # nothing was opened


def test_exiting_a_phase_that_is_not_open_leaves_the_open_one_running():
    clock = ticking(0.0, 1.0, 2.0, 3.0, 4.0)
    clock.enter("generation")  # 1
    clock.exit("reward")  # 2: not open
    clock.exit("generation")  # 3
    assert clock.lap() == idle(4.0, generation=2.0)


def test_exiting_a_phase_open_twice_closes_the_inner_one():
    # reward 1-2, update 2-3, reward 3-4, update 4-5, reward 5-6, other 0-1 and 6-7
    clock = ticking(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    clock.enter("reward")
    clock.enter("update")
    clock.enter("reward")
    clock.exit("reward")  # the inner reward: the update goes on
    clock.exit("update")
    clock.exit("reward")
    assert clock.lap() == idle(7.0, reward=3.0, update=2.0)


def test_a_phase_that_raises_is_closed_and_its_seconds_booked():
    clock = ticking(0.0, 1.0, 3.0, 6.0)
    with pytest.raises(RuntimeError), clock.phase("save"):
        raise RuntimeError("disk full")
    assert clock.lap() == idle(6.0, save=2.0)


def test_a_phase_open_across_a_lap_is_split_between_the_two_steps():
    clock = ticking(0.0, 1.0, 3.0, 6.0, 10.0)
    clock.enter("generation")  # 1
    clock.generated(40)
    assert clock.lap() == idle(3.0, generation=2.0) | {"timing/tokens_per_s": 20.0}  # 3
    # The next step counts from the lap, the generation still going, its tokens counted anew (none).
    clock.exit("generation")  # 6
    assert clock.lap() == idle(7.0, generation=3.0)  # 10


def test_tokens_without_generation_time_give_no_tokens_per_second():
    clock = ticking(0.0, 1.0, 2.0, 5.0)
    clock.generated(100)
    with clock.phase("reward"):
        pass
    assert clock.lap() == idle(5.0, reward=1.0)


def test_start_drops_what_was_booked_and_closes_every_phase():
    clock = ticking(0.0, 1.0, 2.0, 4.0, 9.0)
    clock.enter("update")  # 1
    clock.generated(7)
    clock.start()  # 2: training begins now
    clock.enter("generation")  # 4
    assert clock.lap() == idle(7.0, generation=5.0)  # 9: the tokens were dropped (no tokens_per_s)


def test_rounding_never_makes_other_negative():
    # 0.3 + (0.9 - 0.3) is 0.9000000000000001 in floats: a hair more than the step
    clock = ticking(0.0, 0.0, 0.3, 0.3, 0.9, 0.9)
    with clock.phase("generation"):
        pass
    with clock.phase("reward"):
        pass
    metrics = clock.lap()
    assert metrics["timing/other_s"] == 0.0 and metrics["timing/step_s"] == 0.9


def test_phase_books_to_the_clock_and_is_a_no_op_without_one():
    clock = ticking(0.0, 1.0, 4.0, 4.0)
    with timing.phase(clock, "reward"):
        pass
    assert clock.lap() == idle(4.0, reward=3.0)
    with timing.phase(None, "any name"):  # a trainer without a clock: nothing checked, nothing booked
        pass
