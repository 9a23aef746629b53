#!/bin/sh
# rsocket-js 1.0.0-alpha.3 with its server's resumption on (RSocketServer's `resume: {sessionTimeout}`,
# sessions kept 60 s as the reference's), for the suite's resume cases: otherwise the image of
# images/thirdparty/rsocket-js-1.0/, whose entrypoint (copied into this image) does the rest of the
# contract. A separate image because in this mode a SETUP with R that the server refuses (with L:
# "Lease has to be disabled") ends the server process (docs/findings/rsocket.md, F-JS1-11): the
# default image keeps resumption off so the other cases of a run keep their server. It declares
# no conformance.protocols, so `conformance matrix` and `conformance interop` leave it out;
# `--target docker:conformance-thirdparty-rsocket-js-1.0-resume` runs it.
set -eu
RSOCKET_RESUME_MS="${RSOCKET_RESUME_MS:-60000}"
export RSOCKET_RESUME_MS
exec /bin/sh /opt/peer/images/thirdparty/rsocket-js-1.0/entrypoint.sh "$@"
