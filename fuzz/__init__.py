"""Fuzz targets for the reference implementations (see ``python -m fuzz --help``)."""
