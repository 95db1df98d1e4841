#!/usr/bin/env bash
# Fetches the Delta conformance tables the tests read (real tables written by Spark, delta-rs, kernel-rs …)
# from their upstream GitHub repositories, at the commits recorded in hack/conformance/index.json, into
# $DELTA_CONFORMANCE_DIR or ../shared/delta-conformance (the places the tests look). Needs git and Go; it
# downloads only the tables' files (shallow, blobless, sparse fetches). Tables already present are left alone.
#
#   hack/fetch-conformance.sh                    # everything
#   hack/fetch-conformance.sh -dry-run           # what would be fetched from where
#   hack/fetch-conformance.sh -only basic_append,dat/nested_types -dir /tmp/corpus
#
# Archives are checked against their sha256, git objects against the commit, and every table whose files
# all come from upstream against the index's byte count. Expected rows the team transcribed by hand from
# upstream tests exist in no repository: those tables arrive without expected/, and the script lists them.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/fetchconformance "$@"
