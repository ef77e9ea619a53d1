"""Kubernetes' name rules, as reasons: None when the name is valid, else why it is not.

The same rules the API server applies (RFC 1123 labels and subdomains, RFC 1035 labels for
Service names, label values), checked before a Job makes objects from its names, so a job whose
pods or Service would be refused is refused itself, naming the field that makes the bad name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

MAX_LABEL = 63
MAX_SUBDOMAIN = 253
MAX_PORT_NAME = 15
_LABEL_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_PORT_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def dns_label(name: str) -> str | None:
    """An RFC 1123 label (a task name, a pod's hostname)."""
    if len(name) > MAX_LABEL:
        return f"must be at most {MAX_LABEL} characters (it is {len(name)})"
    if not _LABEL_1123.fullmatch(name):
        return (
            "must be lower case letters, digits and '-', starting and ending with a letter or digit"
        )
    return None


def dns_1035_label(name: str) -> str | None:
    """An RFC 1035 label (a Service name): a DNS label that starts with a letter."""
    if len(name) > MAX_LABEL:
        return f"must be at most {MAX_LABEL} characters (it is {len(name)})"
    if not _LABEL_1035.fullmatch(name):
        return "must be lower case letters, digits and '-', starting with a letter"
    return None


def dns_subdomain(name: str, longest: int = MAX_SUBDOMAIN) -> str | None:
    """An RFC 1123 subdomain (most object names), of at most `longest` characters."""
    if len(name) > longest:
        return f"must be at most {longest} characters (it is {len(name)})"
    if not all(_LABEL_1123.fullmatch(part) for part in name.split(".")):
        return (
            "must be lower case letters, digits, '-' and '.', each part starting and ending "
            "with a letter or digit"
        )
    return None


def label_value(value: str) -> str | None:
    """A label value (Lahar labels pods with the job, task and queue names)."""
    if len(value) > MAX_LABEL:
        return f"must be at most {MAX_LABEL} characters to be a label value (it is {len(value)})"
    if value and not _LABEL_VALUE.fullmatch(value):
        return (
            "must be letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
        )
    return None


def qualified_name(name: str) -> str | None:
    """A qualified name (label and annotation keys, toleration keys, resource names): an optional
    DNS subdomain prefix and `/`, then a name of at most 63 letters, digits, '-', '_' and '.',
    starting and ending with a letter or digit."""
    prefix, slash, short = name.rpartition("/")
    if slash and (not prefix or (reason := dns_subdomain(prefix)) is not None):
        return f"has a prefix that {reason if prefix else 'must not be empty'}"
    if not short:
        return "must have a name part"
    if len(short) > MAX_LABEL:
        return f"must have a name part of at most {MAX_LABEL} characters (it is {len(short)})"
    if not _LABEL_VALUE.fullmatch(short):
        return (
            "must be letters, digits, '-', '_' and '.' (after an optional DNS prefix and '/'), "
            "starting and ending with a letter or digit"
        )
    return None


def port_name(name: str) -> str | None:
    """An IANA service name (a container port's name): at most 15 lower case letters, digits and
    '-', with a letter, and no '-' at either end or twice in a row."""
    if len(name) > MAX_PORT_NAME:
        return f"must be at most {MAX_PORT_NAME} characters (it is {len(name)})"
    if not _PORT_NAME.fullmatch(name) or "--" in name or not re.search("[a-z]", name):
        return (
            "must be lower case letters, digits and '-', with at least one letter, and no '-' "
            "at either end or twice in a row"
        )
    return None


def why_not(value: object, check: Callable[[str], str | None]) -> str | None:
    """Why `value` is not a string `check` accepts (`check`'s reason, or that it is not a
    string), or None when it is."""
    return check(value) if isinstance(value, str) else "must be a string"
