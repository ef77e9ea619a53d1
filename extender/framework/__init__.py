"""The policy engine's frame: outcomes (`status`), the plugin protocol (`plugin`), the policy file
with plugins in tiers (`policy`), a decision over one snapshot (`session`) and what explains it
(`explain`). The gang engine (`extender.gangs`) and preemption (`extender.preemption`) sit below
it. No I/O."""
