"""Implementations as docker images.

``build`` makes the reference images without any registry (base image from
debootstrap, packages downloaded on the host); ``container`` runs any image
that follows docs/image-contract.md and is what ``--target docker:IMAGE`` uses.
"""
