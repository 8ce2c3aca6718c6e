#!/usr/bin/env bash
# The anchor pipeline: what Flux's reference fleets run in CI
# (flux2-kustomize-helm-example's scripts/validate.sh): kustomize build of
# every kustomization.yaml in the tree, piped to kubeconform -strict with
# the CRDs' schemas. Built-in kinds need kubeconform's default schema
# location on GitHub, which this offline machine cannot reach, so they are
# skipped (-ignore-missing-schemas): the anchor checks less than in CI and
# is, if anything, faster than the real one.
#
#   anchor.sh KUSTOMIZE KUBECONFORM SCHEMA_DIR TREE
set -uo pipefail
kustomize=$1 kubeconform=$2 schemas=$3 tree=$4
find "$tree" -type f -name kustomization.yaml -print0 | sort -z |
while IFS= read -r -d '' k; do
	"$kustomize" build --load-restrictor=LoadRestrictionsNone "$(dirname "$k")" 2>/dev/null |
		"$kubeconform" -strict -summary -ignore-missing-schemas -skip=Secret \
			-schema-location "$schemas/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json" 2>&1 |
		grep '^Summary:' || true
done | awk '{ for (i = 1; i <= NF; i++) if ($i == "resources" && $(i+1) == "found") n += $(i-1); if (/Invalid: [1-9]/ || /Errors: [1-9]/) bad++ } END { printf "anchor: %d kustomization(s) with findings, %d resource(s) checked\n", bad, n }'
