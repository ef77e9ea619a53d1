"""Volcano's scheduler vocabulary, and what Lahar does for each name.

Volcano's actions, plugins, plugin arguments, action arguments and `PluginOption` switches, as
Volcano's source has them at commit ed72c7c81 of volcano-sh/volcano (its `pkg/scheduler/conf`,
and each plugin's and action's arguments), with the names of earlier releases Volcano still
accepts in old files (the reservation plugin, the elect and reserve actions, predicates' GPU
arguments). Beside each name stands Lahar's answer, as a note kind and the note's text:

- mapped: honoured, possibly under another name or in another place;
- kube-scheduler: left to kube-scheduler and its profile;
- always: always on in Lahar;
- differs: not honoured; the text says what Lahar does instead.

Data only: `volcano_conf` walks a configuration against these tables, refuses the names that are
not here, and writes the notes. A name Volcano adds goes here, with its answer, before any file
that uses it can be read.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.plugins import preempt

# The configuration's keys, and a plugin entry's (Volcano's PluginOption)

TOP_KEYS = ("actions", "tiers", "configurations", "metrics")
PREEMPTABLE = "enablePreemptable"
CARRIES_PREEMPTABLE = ("gang", "drf")  # Lahar's plugins that take Volcano's switch
RECLAIMABLE = "enableReclaimable"
CARRIES_RECLAIMABLE = ("gang",)  # Lahar's plugin that takes this one

# Volcano's PluginOption switches: what each turns on in a plugin, and its value when unset.
SWITCHES: Mapping[str, str] = {
    "enableJobOrder": "job order",
    "enableHierarchy": "hierarchical sharing",
    "enableJobReady": "job-ready check",
    "enableJobPipelined": "job-pipelined check",
    "enableTaskOrder": "task order",
    PREEMPTABLE: "preemption victims",
    "enableReclaimable": "reclaim victims",
    "enablePreemptive": "preemptive check",
    "enableQueueOrder": "queue order",
    "enabledClusterOrder": "cluster order",
    "enablePredicate": "predicates",
    "enableBestNode": "best-node choice",
    "enableNodeOrder": "node order",
    "enableTargetJob": "target job",
    "enableReservedNodes": "reserved nodes",
    "enableJobEnqueued": "enqueue check",
    "enabledVictim": "victim selection",
    "enableJobStarving": "job-starving check",
    "enabledOverused": "overused check",
    "enabledAllocatable": "allocatable check",
    "enabledHyperNodeOrder": "HyperNode order",
    "enabledSubJobReady": "subgroup-ready check",
    "enabledSubJobPipelined": "subgroup-pipelined check",
    "enabledSubJobOrder": "subgroup order",
    "enabledHyperNodeGradient": "HyperNode gradient",
}
OFF_UNLESS_SET = frozenset({"enableHierarchy", "enabledClusterOrder"})  # Volcano's nil is false
OPTION_KEYS = ("name", "arguments", *SWITCHES)

# Actions

# Volcano's actions (elect and reserve: earlier releases').
ACTIONS = (
    "enqueue",
    "allocate",
    "backfill",
    "preempt",
    "reclaim",
    "gangpreempt",
    "gangreclaim",
    "shuffle",
    "elect",
    "reserve",
)
# The actions Lahar does not turn into the preempt plugin: (kind, what Lahar does).
ACTION_NOTES: Mapping[str, tuple[str, str]] = {
    "enqueue": (
        "always",
        "always on: Lahar lets a gang in (its pods past the scheduling gate lahar.io/gang) once "
        "all it still needs fits, in the fair order",
    ),
    "allocate": (
        "always",
        "always on: kube-scheduler places each pod on the nodes Lahar's filter allows, and a "
        "gang's binds wait at Lahar's barrier until minMember members are there",
    ),
    "backfill": (
        "kube-scheduler",
        "pods outside gangs (BestEffort ones too) go straight through kube-scheduler; a gang "
        "that does not fit claims nothing, so smaller gangs behind it use the idle capacity",
    ),
    "shuffle": (
        "differs",
        "dropped: Lahar evicts only for a waiting gang (preempt, reclaim), never to rebalance "
        "running pods; use the Kubernetes descheduler for that",
    ),
    "elect": ("differs", "dropped: an action of earlier Volcano releases, which Lahar has not"),
    "reserve": ("differs", "dropped: an action of earlier Volcano releases, which Lahar has not"),
}
# What leaving each action out does in Volcano, and in Lahar.
MISSING_ACTIONS: Mapping[str, str] = {
    "enqueue": "Volcano lets every job in at once; Lahar lets a gang in only once it fits",
    "allocate": "Volcano places nothing; Lahar and kube-scheduler always place pods",
    "backfill": "Volcano leaves BestEffort pods waiting; kube-scheduler places them",
}

# Volcano's actions that evict, by the entry of the preempt plugin's preempt.actions each becomes.
EVICTING_ACTIONS: Mapping[str, tuple[str, ...]] = {
    preempt.PREEMPT: ("preempt", "gangpreempt"),
    preempt.RECLAIM: ("reclaim", "gangreclaim"),
}

# The arguments each action reads (its entry under configurations), and what Lahar does for each.
_CACHE = "predicateErrorCacheEnable"
ACTION_ARGUMENTS: Mapping[str, tuple[str, ...]] = {
    "enqueue": ("overcommit-factor",),  # earlier releases read it here
    "allocate": (_CACHE,),
    "backfill": (_CACHE,),
    "reclaim": (_CACHE,),
    "preempt": (
        _CACHE,
        "enableTopologyAwarePreemption",
        "topologyAwarePreemptWorkerNum",
        "minCandidateNodesPercentage",
        "minCandidateNodesAbsolute",
        "maxCandidateNodesAbsolute",
    ),
    "gangpreempt": ("maxDomains", "allowWholeBundle"),
    "gangreclaim": ("maxDomains", "allowWholeBundle"),
    "shuffle": (),
    "elect": (),
    "reserve": (),
}

_NO_LIMITS = (
    "Lahar's victim search is exact within a budget, then greedy, over every node: no "
    "candidate-node limits"
)
ACTION_ARGUMENT_NOTES: Mapping[str, str] = {
    "overcommit-factor": "Lahar lets a gang in only when it fits now, with no overcommit factor",
    _CACHE: "Volcano's own predicate cache: nothing to set",
    "enableTopologyAwarePreemption": (
        "Lahar's victim search is its own (gangs in a HyperNode's reach are searched one "
        "HyperNode at a time); nothing to set"
    ),
    "topologyAwarePreemptWorkerNum": "Lahar's victim search is its own; nothing to set",
    "minCandidateNodesPercentage": _NO_LIMITS,
    "minCandidateNodesAbsolute": _NO_LIMITS,
    "maxCandidateNodesAbsolute": _NO_LIMITS,
    "maxDomains": "Lahar looks at every HyperNode a gang may use; no domain limit",
    "allowWholeBundle": "Lahar may always take whole gangs as victims",
}

# Plugins

# Plugins Lahar does not run: (kind, what Lahar does instead). Of their arguments only
# overcommit's and nodeorder's are read; the note covers the others'.
DROPPED: Mapping[str, tuple[str, str]] = {
    "conformance": (
        "always",
        "always on: a pod in kube-system or of priorityClassName system-cluster-critical or "
        "system-node-critical is never evicted",
    ),
    "overcommit": (
        "differs",
        "dropped: Lahar lets a gang in only when all it still needs fits now, with no "
        "overcommit factor; the gangs beyond wait behind the scheduling gate",
    ),
    "nodeorder": (
        "kube-scheduler",
        "kube-scheduler scores nodes: set its score plugins' weights in its profile "
        "(policy/kube-scheduler-config.yaml)",
    ),
    "pdb": (
        "always",
        "always on: Lahar evicts through the Eviction API after a dry run of every victim, so a "
        "PodDisruptionBudget that forbids one forbids the preemption",
    ),
    "network-topology-aware": (
        "always",
        "always on: a gang with networkTopology (and subGroupPolicy) is placed within the "
        "HyperNodes it allows, the tightest that fits first; its arguments are dropped",
    ),
    "deviceshare": (
        "differs",
        "dropped: Lahar does not share devices; whole devices are extended resources that "
        "kube-scheduler fits, and shared ones need kube-scheduler's DynamicResources (DRA)",
    ),
    "extender": (
        "kube-scheduler",
        "dropped: Lahar is itself kube-scheduler's extender; add another extender to "
        "kube-scheduler's configuration (extenders)",
    ),
    "nodegroup": (
        "differs",
        "dropped: queues have no node groups in Lahar; give the pods node affinity "
        "(kube-scheduler's NodeAffinity)",
    ),
    "numa-aware": (
        "kube-scheduler",
        "dropped: NUMA placement is the kubelet's Topology Manager's; kube-scheduler and Lahar "
        "do not see NUMA",
    ),
    "rescheduling": (
        "differs",
        "dropped: Lahar never evicts running pods to rebalance nodes; use the Kubernetes "
        "descheduler",
    ),
    "resource-strategy-fit": (
        "kube-scheduler",
        "dropped: kube-scheduler's NodeResourcesFit scores with one scoringStrategy for all "
        "resources (MostAllocated with binpack)",
    ),
    "resourcequota": (
        "differs",
        "dropped: Lahar does not keep a gang waiting for its namespace's ResourceQuota; the API "
        "server's quota admission refuses pods beyond it",
    ),
    "task-topology": (
        "differs",
        "dropped: affinity between a job's tasks is not Lahar's; give the pods pod affinity "
        "(kube-scheduler's InterPodAffinity)",
    ),
    "tdm": ("differs", "dropped: Lahar has no revocable zones (time-division multiplexing)"),
    "usage": (
        "differs",
        "dropped: Lahar and kube-scheduler weigh nodes by requests, not by measured usage",
    ),
    "cdp": ("differs", "dropped: Lahar has no cooldown protection for elastic pods"),
    "reservation": (
        "differs",
        "dropped: a plugin of earlier Volcano releases; Lahar's sla drains capacity for a "
        "starving gang instead",
    ),
}

# Volcano's plugins Lahar runs (capacity as proportion), and all that Volcano ships.
KEPT = ("gang", "priority", "drf", "proportion", "capacity", "predicates", "binpack", "sla")
VOLCANO_PLUGINS = (*KEPT, *DROPPED)

# Lahar's plugin of the same name, and what it does.
SAME_PLUGINS: Mapping[str, str] = {
    "priority": "within a queue, a gang of higher PriorityClass goes first",
    "drf": "within a queue, the gang with the smallest dominant share goes first",
    "proportion": (
        "queues share the cluster by weight, within each Queue's capability, deserved and guarantee"
    ),
}

# Plugins Volcano refuses in one configuration (both share queues).
SHARES_QUEUES = {"capacity": "proportion", "proportion": "capacity"}

# Plugin arguments

# nodeorder's weights and the kube-scheduler score plugin each one is.
NODEORDER: Mapping[str, str] = {
    "nodeaffinity.weight": "NodeAffinity",
    "podaffinity.weight": "InterPodAffinity",
    "leastrequested.weight": "NodeResourcesFit (scoringStrategy LeastAllocated)",
    "mostrequested.weight": "NodeResourcesFit (scoringStrategy MostAllocated)",
    "balancedresource.weight": (
        "NodeResourcesBalancedAllocation (off in Lahar's shipped profile: it would spread what "
        "binpack packs)"
    ),
    "tainttoleration.weight": "TaintToleration",
    "imagelocality.weight": "ImageLocality",
    "podtopologyspread.weight": "PodTopologySpread",
    "selectorspread.weight": "SelectorSpread (gone from kube-scheduler: use PodTopologySpread)",
}
# predicates' switches and the kube-scheduler filter each one is.
PREDICATE_FILTERS: Mapping[str, str] = {
    "predicate.NodeAffinityEnable": "NodeAffinity",
    "predicate.NodePortsEnable": "NodePorts",
    "predicate.TaintTolerationEnable": "TaintToleration",
    "predicate.PodAffinityEnable": "InterPodAffinity",
    "predicate.NodeVolumeLimitsEnable": "NodeVolumeLimits",
    "predicate.VolumeZoneEnable": "VolumeZone",
    "predicate.PodTopologySpreadEnable": "PodTopologySpread",
    "predicate.VolumeBindingEnable": "VolumeBinding",
    "predicate.DynamicResourceAllocationEnable": "DynamicResources",
}
_NO_SHARING = "dropped (earlier releases' GPU sharing): Lahar does not share devices"
_NO_PROPORTIONAL = "dropped: Lahar keeps no cpu and memory free in proportion to a node's GPUs"
PREDICATE_OTHERS: Mapping[str, tuple[str, str]] = {
    "predicate.CacheEnable": ("differs", "Volcano's own predicate cache: nothing to set"),
    "volumebinding.bindTimeoutSeconds": (
        "kube-scheduler",
        "kube-scheduler's VolumeBinding argument bindTimeoutSeconds: set it in its profile",
    ),
    "volumebinding.shape": (
        "kube-scheduler",
        "kube-scheduler's VolumeBinding argument shape: set it in its profile",
    ),
    "volumebinding.weight": (
        "kube-scheduler",
        "kube-scheduler's VolumeBinding score weight: set it in its profile",
    ),
    "dynamicresources.filterTimeoutSeconds": (
        "kube-scheduler",
        "kube-scheduler's DynamicResources argument filterTimeout: set it in its profile",
    ),
    "predicate.GPUSharingEnable": ("differs", _NO_SHARING),
    "predicate.GPUNumberEnable": ("differs", _NO_SHARING),
    "predicate.ProportionalEnable": ("differs", _NO_PROPORTIONAL),
    "predicate.resources": ("differs", _NO_PROPORTIONAL),
}
PROPORTIONAL_PREFIX = "predicate.resources."  # predicate.resources.<name>.cpu|memory
_NO_DRA = "dropped: Lahar's queue shares count the resources pods request, not DRA claims"
CAPACITY_ARGUMENTS: Mapping[str, tuple[str, str]] = {
    "ancestorReclaimLevel": (
        "differs",
        "dropped: in a queue tree Lahar reclaims from the closest kin first, then further up, "
        "with no level limit",
    ),
    "capacity.DynamicResourceAllocationEnable": ("differs", _NO_DRA),
    "capacity.DRAConsumableCapacityEnable": ("differs", _NO_DRA),
}

BINPACK_KEYS = ("binpack.weight", "binpack.cpu", "binpack.memory", "binpack.resources")
BINPACK_PREFIX = "binpack.resources."
BASIC_RESOURCES = ("cpu", "memory")  # weighed by binpack.cpu and binpack.memory, never by the list

# Plugin switches

# The switches that change something in each plugin read here (the functions it registers).
_QUEUE_GATES = frozenset(
    [
        "enabledAllocatable",
        "enableJobEnqueued",
        "enabledOverused",
        "enablePredicate",
        "enablePreemptive",
        "enableQueueOrder",
        "enableReclaimable",
    ]
)
GATED: Mapping[str, frozenset[str]] = {
    "gang": frozenset(
        [
            "enableJobOrder",
            "enableJobPipelined",
            "enableJobReady",
            "enableJobStarving",
            "enablePreemptable",
            "enableReclaimable",
            "enabledSubJobOrder",
            "enabledSubJobPipelined",
            "enabledSubJobReady",
        ]
    ),
    "priority": frozenset(
        [
            "enableJobOrder",
            "enableJobStarving",
            "enablePreemptable",
            "enabledSubJobOrder",
            "enableTaskOrder",
        ]
    ),
    "drf": frozenset(
        [
            "enableJobOrder",
            "enablePreemptable",
            "enableQueueOrder",
            "enableReclaimable",
            "enableHierarchy",
        ]
    ),
    "proportion": _QUEUE_GATES,
    "capacity": _QUEUE_GATES | {PREEMPTABLE, "enableHierarchy"},
    "predicates": frozenset({"enablePredicate", "enableNodeOrder"}),
    "binpack": frozenset({"enableNodeOrder"}),
    "sla": frozenset({"enableJobEnqueued", "enableJobOrder", "enableJobPipelined"}),
}

# What a switch set to false does in Lahar, per plugin (kind, text); others get a general note.
SWITCHED_OFF: Mapping[tuple[str, str], tuple[str, str]] = {
    ("gang", "enableJobOrder"): ("mapped", "Lahar's gang does not rank gangs either"),
    **{
        ("gang", key): (
            "differs",
            "Lahar's gang always waits until minMember members (and each subgroup's minimum) "
            "fit together: gangs stay all or nothing",
        )
        for key in (
            "enableJobReady",
            "enableJobPipelined",
            "enabledSubJobReady",
            "enabledSubJobPipelined",
        )
    },
    **{
        (name, "enableJobStarving"): (
            "differs",
            "in Lahar any gang refused for want of capacity may preempt",
        )
        for name in ("gang", "priority")
    },
    ("priority", "enableJobOrder"): (
        "differs",
        "Lahar's priority always ranks gangs by PriorityClass; leave the plugin out to stop it "
        "(and preemption for priority with it)",
    ),
    ("priority", PREEMPTABLE): (
        "differs",
        "Lahar's priority lets a gang preempt gangs of lower priority in its queue; leave "
        "preempt out of preempt.actions to stop it",
    ),
    ("priority", "enableTaskOrder"): (
        "kube-scheduler",
        "kube-scheduler's queue orders pods by priority (PrioritySort); Lahar has no task order",
    ),
    ("drf", "enableJobOrder"): (
        "differs",
        "Lahar's drf always ranks gangs by dominant share; leave the plugin out to stop it",
    ),
    ("drf", "enableQueueOrder"): ("mapped", "Lahar's drf does not order queues either"),
    **{
        (name, "enableReclaimable"): (
            "differs",
            "Lahar reclaims from any queue above its deserved share whose Queue is reclaimable "
            "(spec.reclaimable); this plugin's part cannot be switched off",
        )
        for name in ("drf", "proportion", "capacity")
    },
    **{
        (name, "enableQueueOrder"): (
            "differs",
            "Lahar's proportion always puts the queue least far into its share first",
        )
        for name in ("proportion", "capacity")
    },
    ("predicates", "enablePredicate"): (
        "kube-scheduler",
        "kube-scheduler's filters always run, as its profile sets them, and Lahar's predicates "
        "always checks resource fit",
    ),
    ("predicates", "enableNodeOrder"): (
        "kube-scheduler",
        "kube-scheduler's VolumeBinding scores: disable its score in kube-scheduler's profile",
    ),
    ("sla", "enableJobOrder"): (
        "differs",
        "Lahar's sla always puts a starving gang first in its queue",
    ),
    **{
        ("sla", key): (
            "differs",
            "a starving gang in Lahar takes the free capacity of the nodes it needs until it fits",
        )
        for key in ("enableJobEnqueued", "enableJobPipelined")
    },
}

# What enablePreemptable (enableReclaimable), kept on Lahar's gang and drf (gang), means there.
PREEMPTABLE_MEANS: Mapping[tuple[str, bool], str] = {
    ("gang", True): "only members beyond minMember are victims, never a whole gang",
    ("gang", False): "whole gangs may be victims too (never part of a gang's minMember)",
    ("drf", True): "a victim's gang keeps a dominant share at least the preemptor's",
    ("drf", False): "no dominant-share rule for victims",
}
RECLAIMABLE_MEANS: Mapping[tuple[str, bool], str] = {
    ("gang", True): "reclaim takes only members beyond minMember, never a whole gang",
    ("gang", False): "reclaim may take whole gangs too (never part of a gang's minMember)",
}
