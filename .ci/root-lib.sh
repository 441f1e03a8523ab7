# SPDX-License-Identifier: BSD-2-Clause
# Sourced by .ci/install-root and .ci/unit-nspawn: a fresh Debian root from
# a .ci/debroot tarball, commands run in it, and the packages installed in
# it with apt. The caller defines fail and sets $log.

# mounted PATH: PATH is a mount point.
mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }

# root_unpack TARBALL ROOT DEB...: ROOT made afresh from TARBALL, with the
# host's resolver, a policy-rc.d that refuses every service start (no
# dependency's daemon starts on the host's network) and the DEBs in
# /tmp/debs; $debs holds their paths in the root.
root_unpack() {
  _tar=$1 root=$2
  shift 2
  [ "$(id -u)" -eq 0 ] || fail "needs root (chroot, mount)"
  # A leftover mount from a killed run: never delete through it.
  if mounted "$root/proc"; then umount "$root/proc" || fail "$root/proc is still mounted"; fi
  rm -rf "$root" && mkdir -p "$root" || fail "cannot make $root"
  tar --numeric-owner -xf "$_tar" -C "$root" || fail "cannot unpack $_tar"
  cat /etc/resolv.conf >"$root/etc/resolv.conf" || fail "no /etc/resolv.conf"
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  mkdir -p "$root/tmp/debs"
  debs=
  for _d in "$@"; do
    cp "$_d" "$root/tmp/debs/" || fail "cannot copy $_d"
    debs="$debs /tmp/debs/$(basename "$_d")"
  done
}

# in_root CMD...: CMD in the root, with a clean environment (but the
# host's proxy for the archive, if it has one).
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
    ${http_proxy:+"http_proxy=$http_proxy"} \
    ${https_proxy:+"https_proxy=$https_proxy"} "$@"
}

# logged CMD...: in the root, its output appended to $log.
logged() {
  echo "# $*" >>"$log"
  in_root "$@" >>"$log" 2>&1
}

# root_install [PACKAGE...]: apt-get install of $debs (and PACKAGEs from
# the archive), dependencies resolved by apt as on a user's machine. The
# root's package lists are fetched on the first call.
root_install() {
  if [ -z "$(ls "$root/var/lib/apt/lists/" 2>/dev/null | grep -v '^lock$\|^partial$')" ]; then
    logged apt-get update -q || return 1
  fi
  # shellcheck disable=SC2086
  logged apt-get install -y -q --no-install-recommends $debs "$@"
}
