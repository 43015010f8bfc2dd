"""Background-knowledge-aware clustering: every class keeps k, beta-likeness and a bound J
on how far apart (Jensen-Shannon divergence, in bits) the adversary's prior beliefs about
its members' sensitive values may be.

Phase 1 (:mod:`.phase1`) groups the rows whose background knowledge (:mod:`.knowledge`)
is alike, by complete linkage cut at J; phase 2 clusters each group on its own, by
k-anonymity first (:mod:`.kprimacy`, then :mod:`.kagg` or :mod:`.kinc` for the clusters
that miss beta-likeness) or by beta-likeness first (:mod:`.beta_ge`). :mod:`.run` ties
them to the registry. Only :mod:`.options` is imported with the registry; the rest (and
scipy) when a run asks for it.
"""
