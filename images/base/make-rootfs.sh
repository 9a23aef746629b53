#!/bin/sh
# Recipe of the base image: a Debian bookworm minbase root filesystem with
# Python 3.11, pip and venv, made by debootstrap so no registry is needed.
# The text of this file is part of the base image's content hash: any change
# here rebuilds the base image and every image FROM it.
# Usage: make-rootfs.sh ROOTFS_DIR DEBIAN_MIRROR_URL
set -eu

ROOTFS="$1"
MIRROR="$2"

debootstrap --variant=minbase --include=python3,python3-pip,python3-venv \
    bookworm "$ROOTFS" "$MIRROR"

# The images never run apt: package lists and caches are dead weight.
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
    "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/log/*.log
