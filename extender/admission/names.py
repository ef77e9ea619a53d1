"""Kubernetes' name rules, as reasons: None when the name is valid, else why it is not.

The same rules the API server applies (RFC 1123 labels and subdomains, RFC 1035 labels for
Service names, label values), checked before a Job makes objects from its names, so a job whose
pods or Service would be refused is refused itself, naming the field that makes the bad name.
"""

from __future__ import annotations

import re

MAX_LABEL = 63
MAX_SUBDOMAIN = 253
_LABEL_1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


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


def dns_subdomain(name: str) -> str | None:
    """An RFC 1123 subdomain (most object names)."""
    if len(name) > MAX_SUBDOMAIN:
        return f"must be at most {MAX_SUBDOMAIN} characters (it is {len(name)})"
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
