"""Lahar's policies, one module each, and the registry the policy file names them from.

Each module holds one plugin class (implementing only the hooks it needs, and carrying the
`Switches` it turns on in the engine, if any) and a `configure` factory that validates the
plugin's arguments from the policy file.
"""

from collections.abc import Mapping

from extender.framework.plugin import PluginFactory
from extender.plugins import (
    binpack,
    drf,
    gang,
    predicates,
    preempt,
    priority,
    proportion,
    sla,
    spread,
)

REGISTRY: Mapping[str, PluginFactory] = {
    binpack.NAME: binpack.configure,
    drf.NAME: drf.configure,
    gang.NAME: gang.configure,
    preempt.NAME: preempt.configure,
    predicates.NAME: predicates.configure,
    priority.NAME: priority.configure,
    proportion.NAME: proportion.configure,
    sla.NAME: sla.configure,
    spread.NAME: spread.configure,
}
