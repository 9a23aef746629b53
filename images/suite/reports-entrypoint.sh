#!/bin/sh
# Entrypoint of conformance-suite-reports: `conformance`, with a passwd entry for the user first.
# `docker run --user "$(id -u):$(id -g)"` gives a user the image does not know, and Java (Spark's
# Hadoop login, Ivy's home folder) stops when the user has no name and no home.
set -eu
if ! whoami >/dev/null 2>&1; then
    echo "conformance:x:$(id -u):$(id -g):conformance:/tmp:/bin/sh" >> /etc/passwd
fi
exec conformance "$@"
