# Preflight fact probe: runs on each node over SSH, prints key=value lines, changes nothing.
k=$(uname -r)
echo "uid=$(id -u)"
if [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then echo "privilege=yes"; else echo "privilege=no"; fi
# The OS as the platform role reads it (os-release(5); /usr/lib/os-release when /etc has none).
f=/etc/os-release; [ -r "$f" ] || f=/usr/lib/os-release
if [ -r "$f" ]; then . "$f"; fi
echo "os_id=${ID:-}"; echo "os_version=${VERSION_ID:-}"; echo "os_name=${NAME:-}"; echo "os_pretty=${PRETTY_NAME:-}"
echo "kernel=$k"
if [ -d "/lib/modules/$k/build" ]; then echo "headers=installed"
elif command -v apt-cache >/dev/null && apt-cache policy "linux-headers-$k" 2>/dev/null | grep -q 'Candidate: [0-9]'; then echo "headers=installable"
else echo "headers=missing"; fi
echo "disk_root_kb=$(df -Pk / | awk 'NR==2{print $4}')"
echo "disk_var_kb=$(df -Pk /var | awk 'NR==2{print $4}')"
if command -v python3 >/dev/null; then echo "python3=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"; else echo "python3=none"; fi
if command -v lspci >/dev/null; then
  echo "gpu_source=lspci"
  echo "gpus=$(lspci -n -d 10de: 2>/dev/null | awk '$2 ~ /^03/ {split($3, id, ":"); printf "%s,", id[2]}')"
else
  echo "gpu_source=sysfs"
  printf 'gpus='
  for d in /sys/bus/pci/devices/*; do
    [ "$(cat "$d/vendor" 2>/dev/null)" = "0x10de" ] || continue
    case "$(cat "$d/class")" in 0x03*) printf '%s,' "$(cut -c3- "$d/device")";; esac
  done
  echo
fi
printf 'rdma='
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  printf '%s:%s,' "$(basename "$d")" "$(basename "$(readlink -f "$d/device/driver")")"
done
echo
# Processors and memory as slurmd -C reports them: lscpu's parseable list (one line per online CPU).
if command -v lscpu >/dev/null; then
  LC_ALL=C lscpu -p=SOCKET,CORE 2>/dev/null | awk -F, '!/^#/ {cpus++; s[$1]=1; c[$1","$2]=1}
    END {ns=length(s); nc=length(c); if (cpus && ns && nc) {
      print "cpus=" cpus; print "boards=1"; print "sockets_per_board=" ns;
      print "cores_per_socket=" int(nc / ns); print "threads_per_core=" int(cpus / nc)}}'
fi
echo "memory_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)"
echo "gpu_device_files=$(ls /dev 2>/dev/null | grep -c '^nvidia[0-9][0-9]*$')"
if getent hosts "$(hostname)" >/dev/null; then echo "resolves=yes"; else echo "resolves=no"; fi
echo "hostname=$(hostname)"
