#!/bin/bash
# PID 1 of a sandbox node (named bash, so Ansible sees service_mgr=systemd through /run/systemd/system):
# starts enabled units as systemd would, keeps sshd up, reaps orphans, and stops everything on SIGTERM.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH LANG=C.UTF-8

others_left() {
    local proc
    for proc in /proc/[0-9]*; do
        [ "$proc" != /proc/1 ] && return 0
    done
    return 1
}

shutdown() {
    kill -TERM -1 2>/dev/null
    for _ in $(seq 30); do
        others_left || break
        sleep 0.1
    done
    exit 0
}

trap shutdown TERM INT
mkdir -p /run/systemd/system /run/sshd /run/lock
if [ -s /etc/hostname ]; then hostname -F /etc/hostname; fi  # as systemd would: a renamed node stays renamed
exec >>/var/log/sandbox-init.log 2>&1 </dev/null
echo "$(date -Is) boot"
systemd-tmpfiles --create --remove --boot 2>/dev/null  # /run is a fresh tmpfs, as after a real boot
(
    # sshd first, so a unit that hangs on start cannot keep the node unreachable.
    systemctl start ssh || /usr/sbin/sshd
    systemctl default
    # Boot is done: people may log in (systemd-user-sessions removes the file systemd-tmpfiles made at boot; pam_nologin
    # refuses every user but root while it exists).
    rm -f /run/nologin
    echo "$(date -Is) units started"
    # Network filesystems from fstab, as systemd's remote-fs.target would (their servers may need a moment).
    for _ in $(seq 30); do
        mount -a -O _netdev 2>/dev/null && break
        sleep 2
    done
    echo "$(date -Is) network mounts done"
) &
while :; do
    sleep 3600 &
    wait $!
done
