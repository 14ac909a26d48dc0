"""`provision status`: the state of every node in one record, gathered at once.

Per node: what the provider says (running, stopped, ...) and its address; what Slurm says (state, flags, the drain
reason with who set it and when, whether it is held in the hold reservation), read from the controller in one query
for all nodes (`slurm`); the health program's last pass (provision.node.health); the last certify verdict that named the
node (`certified`, from the reports folder); the OS and Slurm it runs (provision.node.software). `gather` puts them in
a ClusterStatus (`records`); a part that cannot be read (a controller that does not answer, a node unreachable) is
said in the record, and the rest is still there.
"""
