"""Lahar's policies, one module each, and the registry the policy file names them from.

Each module holds one plugin class (implementing only the hooks it needs) and a `configure`
factory that validates the plugin's arguments from the policy file.
"""

from collections.abc import Mapping

from extender.framework.plugin import PluginFactory
from extender.plugins import binpack, gang, predicates, spread

REGISTRY: Mapping[str, PluginFactory] = {
    binpack.NAME: binpack.configure,
    gang.NAME: gang.configure,
    predicates.NAME: predicates.configure,
    spread.NAME: spread.configure,
}
