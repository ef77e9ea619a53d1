"""The event hub: listeners by event type, in the order they subscribed, told at once or on the
loop's next turn."""

from __future__ import annotations

import asyncio

from extender.cache.events import Events, GangChanged, PodGroupChanged, QueuesChanged, later


def test_listeners_hear_their_events_type_only_in_the_order_they_subscribed() -> None:
    events = Events()
    heard: list[tuple[str, object]] = []
    events.subscribe(GangChanged, lambda event: heard.append(("first", event)))
    events.subscribe(PodGroupChanged, lambda event: heard.append(("group", event)))
    events.subscribe(GangChanged, lambda event: heard.append(("second", event)))
    events.publish(GangChanged("ml/a"))
    events.publish(QueuesChanged())  # nobody listens: nothing happens
    assert heard == [("first", GangChanged("ml/a")), ("second", GangChanged("ml/a"))]


def test_later_tells_after_the_call_that_published_on_the_loop() -> None:
    events = Events(later)
    heard: list[str] = []
    events.subscribe(GangChanged, lambda event: heard.append(event.key))

    async def main() -> list[str]:
        events.publish(GangChanged("ml/a"))
        during = list(heard)  # the publishing call has not ended: nobody told yet
        await asyncio.sleep(0)
        return during

    assert asyncio.run(main()) == []
    assert heard == ["ml/a"]


def test_later_tells_at_once_when_no_loop_runs() -> None:
    events = Events(later)
    heard: list[str] = []
    events.subscribe(GangChanged, lambda event: heard.append(event.key))
    events.publish(GangChanged("ml/a"))
    assert heard == ["ml/a"]
