"""A cluster's life once it runs: the stage table `up` runs and the other library calls (lifecycle), what a changed
spec changes (change), the steps that apply it (converge), the spec file a cluster is bound to (binding), deploys
batch by batch (rolling), the clusters this machine knows (clusters) and the lock every changing command takes
(lock)."""
