"""One Secret on a fake API server, for the webhook's certificate tests: resourceVersions, a
create that finds the name taken, a replace at a version that changed, and a hook that lets
another replica write just before this one does (the race `keep` must settle)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from extender.kube.secrets import secret_data


class FakeSecret:
    def __init__(self, data: dict[str, bytes] | None = None) -> None:
        self.secret: dict[str, Any] | None = None
        self.version = 0
        self.writes: list[str] = []  # this replica's writes that the server took
        self.before_write: Callable[[], None] = lambda: None  # another replica, racing
        if data is not None:
            self.store(data)

    def store(self, data: dict[str, bytes]) -> None:
        """Write `data` as any writer would (a new resourceVersion)."""
        self.version += 1
        self.secret = {
            "metadata": {"name": "lahar-webhook-tls", "resourceVersion": str(self.version)},
            "data": {key: base64.b64encode(value).decode() for key, value in data.items()},
        }

    def delete(self) -> None:
        self.secret = None

    @property
    def data(self) -> dict[str, bytes] | None:
        return None if self.secret is None else secret_data(self.secret)

    # -- SecretIo ------------------------------------------------------------------------------

    def get(self) -> dict[str, Any] | None:
        return None if self.secret is None else {**self.secret}

    def create(self, data: dict[str, bytes]) -> bool:
        self.before_write()
        if self.secret is not None:
            return False
        self.store(data)
        self.writes.append("create")
        return True

    def replace(self, stored: dict[str, Any], data: dict[str, bytes]) -> bool:
        self.before_write()
        if self.secret is None or self.secret["metadata"] != stored["metadata"]:
            return False
        self.store(data)
        self.writes.append("replace")
        return True
