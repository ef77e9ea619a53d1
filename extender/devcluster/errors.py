"""The one error type of the dev cluster: a single line saying what is wrong and what to do."""


class DevClusterError(Exception):
    """Starting, stopping or building the dev cluster failed; `str()` is the one-line message."""
