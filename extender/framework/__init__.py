"""The policy engine's frame: outcomes (`status`), the plugin protocol (`plugin`), the policy file
with plugins in tiers (`policy`) and a decision over one snapshot (`session`). No I/O."""
