#!/bin/sh
# The base image of the Containerfile, made without a container registry (docs/deploying.md,
# "Container image"): a minimal Debian 12 (bookworm) root file system from Debian's own mirror, by
# debootstrap, brought up to date with bookworm-updates and bookworm-security, and imported into the
# local image store as localhost/shiori-base:bookworm. Both stages of the Containerfile start from it.
#
# Needs root (debootstrap and chroot), debootstrap and podman. Idempotent: when the image already
# exists it does nothing; FORCE=1 rebuilds it (e.g. to pick up newer Debian security updates).
#
#   sh scripts/container-base.sh
#   FORCE=1 DEBIAN_MIRROR=http://deb.debian.org/debian sh scripts/container-base.sh
set -eu

IMAGE=${IMAGE:-localhost/shiori-base:bookworm}
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

if [ "${FORCE:-0}" != 1 ] && podman image exists "$IMAGE"; then
  echo "$IMAGE exists (FORCE=1 rebuilds it)"
  exit 0
fi

for tool in debootstrap podman chroot; do
  command -v "$tool" >/dev/null || { echo "container-base: $tool is missing (apt-get install $tool)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "container-base: debootstrap needs root" >&2; exit 1; }

root=$(mktemp -d "${TMPDIR:-/tmp}/shiori-base-$SUITE.XXXXXX")
# apt downloads as the _apt user, which must reach the target (mktemp made it private).
chmod 755 "$root"
cleanup() { rm -rf "$root"; }
trap cleanup EXIT INT TERM

# minbase: only Essential packages and apt, no init system, no compilers.
debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR"

cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
# Containers start from images, not from an installer: no documentation, no recommended packages.
cat >"$root/etc/apt/apt.conf.d/90container" <<EOF
APT::Install-Recommends "false";
APT::Install-Suggests "false";
EOF
cat >"$root/etc/dpkg/dpkg.cfg.d/90container" <<EOF
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
EOF

cp /etc/resolv.conf "$root/etc/resolv.conf"
chroot "$root" apt-get update
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -y upgrade
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/*
# The container runtime provides these.
: >"$root/etc/resolv.conf"
: >"$root/etc/hostname"

tar --numeric-owner -C "$root" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  --message "debootstrap --variant=minbase $SUITE $MIRROR, upgraded" \
  - "$IMAGE"
podman image ls "$IMAGE"
