"""Reaching the nodes over SSH: commands run on one node or many (commands), the ssh options Ansible logs in with
(ssh_options), the cluster's key pair (sshkeys) and the ssh command line of `provision ssh` (login)."""
