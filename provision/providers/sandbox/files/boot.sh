#!/bin/bash
# Runs as PID 1 of a new node (fresh UTS, mount, PID and IPC namespaces, inside the node's network
# namespace): mounts the node's root and kernel file systems, pivots into it, then becomes its init.
# Every mount lives in the node's own mount namespace and vanishes when the node stops.
set -euo pipefail
lower=$1 upper=$2 work=$3 root=$4 name=$5 gpus=${6:-0}

mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$root"

# /proc of the node's PID namespace; /proc/sys read-only (the kernel is shared) except the
# per-namespace network settings.
mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
mount --bind "$root/proc/sys" "$root/proc/sys"
mount --bind "$root/proc/sys/net" "$root/proc/sys/net"
mount -o remount,bind,ro "$root/proc/sys"
if [ -e "$root/proc/sysrq-trigger" ]; then
    mount --bind -o ro "$root/proc/sysrq-trigger" "$root/proc/sysrq-trigger"
fi

# A fresh sysfs shows this network namespace's devices; slurmd needs the host's cgroup tree.
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup"

mount -t tmpfs -o mode=755,size=65536k,nosuid tmpfs "$root/dev"
for entry in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0" "fuse 10 229" "net/tun 10 200"; do
    read -r dev major minor <<<"$entry"
    mkdir -p "$(dirname "$root/dev/$dev")"
    mknod -m 666 "$root/dev/$dev" c "$major" "$minor"
done
# TEST HOOK: a node of a GPU group gets stand-in device files (NVIDIA's major 195, nothing behind them) so a
# real slurmd and slurmctld schedule GPU gres from gres.conf File= lines. Never made on real hosts.
for ((i = 0; i < gpus; i++)); do
    mknod -m 666 "$root/dev/nvidia$i" c 195 "$i"
done
if [ "$gpus" -gt 0 ]; then mknod -m 666 "$root/dev/nvidiactl" c 195 255; fi
mkdir -p "$root/dev/pts" "$root/dev/shm" "$root/dev/mqueue"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5,nosuid,noexec devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
mount -t mqueue -o nosuid,nodev,noexec mqueue "$root/dev/mqueue"
mount -t tmpfs -o mode=755,nosuid,nodev,size=262144k tmpfs "$root/run"

hostname "$name"

# pivot_root drops every host mount from this namespace (other clusters' namespaces included).
cd "$root"
pivot_root . .
umount -l .
cd /
exec /bin/bash /usr/local/sbin/sandbox-init
