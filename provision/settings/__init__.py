"""The settings a deploy applies to the nodes, and what a change of them reaches.

Everything `up` renders reaches the nodes through the Ansible inventory (provision.inventory): the variables every
host reads (hosts.yml's `all.vars` and group_vars/all/cluster.yml) and each host's own (hosts.yml, with the groups it
is in). `applied` keeps a normalised form of them after each deploy that covered the whole cluster (state document
`settings`); `reach` works out from the roles themselves which nodes a variable reaches and which daemons its change
restarts; `diff` compares the record with what `up` would render now, variable by variable. Nothing here runs Ansible
or touches a node.
"""
