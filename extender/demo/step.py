"""What the demo's steps share: its namespace and how a step prints its line."""

from __future__ import annotations

from collections.abc import Callable

NAMESPACE = "lahar-demo"
Step = Callable[[str], None]  # prints one line of the demo's story
