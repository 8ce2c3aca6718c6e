#!/usr/bin/env bash
# Benchmark of `fleet` against the anchor pipeline (kustomize build of every
# kustomization.yaml | kubeconform -strict with the CRDs' schemas, what
# Flux's reference fleets run in CI) on generated N-cluster trees, side by
# side in the same run. Prints wall, CPU and max RSS (GNU time -v) and the
# ratio fleet/anchor; docs/performance.md keeps the table.
#
#   scripts/bench/bench.sh            # 10 100 1000 clusters
#   scripts/bench/bench.sh 10 100
#   FULL_MAX=100 scripts/bench/bench.sh 10 100 1000   # no full validate above 100
#
# Per size: the tree (internal/testsupport/benchtree: the repository's manifests/ plus
# clusters written as `fleet cluster add` writes them), then
#   anchor cold / warm         the pipeline, twice
#   validate cold / warm       `fleet validate TREE`, a fresh process each
#                              time (cold: the first run on the tree)
#   cluster add                `fleet cluster add bench-new --dry-run`
#   cluster upgrade/remove,    the other requests, --dry-run, on bench-0001
#   app add
#   validate --changed         pull-request mode for a new cluster
#                              (`fleet cluster add` applied on a copy)
# kustomize and kubeconform are built from the module proxy at the
# versions pinned in internal/build/tools/anchor/go.mod.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100 1000)
command -v /usr/bin/time >/dev/null || { echo "bench: needs GNU time at /usr/bin/time" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/bin
mkdir -p "$bin"
echo "building fleet, gentree, crdschemas, kustomize, kubeconform ..." >&2
(cd "$repo" && go build -o "$bin/" ./scripts/fleet ./scripts/bench/gentree ./scripts/bench/crdschemas)
(cd "$repo/internal/build/tools/anchor" && go build -o "$bin/" sigs.k8s.io/kustomize/kustomize/v5 github.com/yannh/kubeconform/cmd/kubeconform)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 -subj /CN=sealed-secret 2>/dev/null
echo "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl" >"$work/known_hosts"

# measure LABEL CMD...: runs CMD under GNU time, prints one row.
measure() {
	local label=$1
	shift
	local out=$work/time.txt log=$work/out.txt
	/usr/bin/time -v -o "$out" "$@" >"$log" 2>&1 || true
	local wall user sys rss
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$out")
	user=$(awk -F': ' '/User time/ { print $2 }' "$out")
	sys=$(awk -F': ' '/System time/ { print $2 }' "$out")
	rss=$(awk -F': ' '/Maximum resident set size/ { printf "%d", $2 / 1024 }' "$out")
	local what
	what=$(grep -E '^(PASS|FAIL):|^anchor:|^cluster |^dry run|^Error|the change fails' "$log" | head -1 | cut -c1-110 || true)
	printf '%-28s %8.2f s %8.2f s CPU %6d MB  %s\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$what"
	echo "$wall" >"$work/last"
}

printf '%-28s %10s %14s %9s  %s\n' "run" "wall" "CPU" "maxRSS" "result"
for n in "${sizes[@]}"; do
	tree=$work/t$n/manifests
	"$bin/gentree" -n "$n" -src "$repo/manifests" -dst "$tree"
	"$bin/crdschemas" -tree "$tree" -out "$work/schemas" 2>/dev/null
	echo "== $n clusters (nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg))"
	measure "anchor cold" "$repo/scripts/bench/anchor.sh" "$bin/kustomize" "$bin/kubeconform" "$work/schemas" "$tree"
	anchor=$(cat "$work/last")
	measure "anchor warm" "$repo/scripts/bench/anchor.sh" "$bin/kustomize" "$bin/kubeconform" "$work/schemas" "$tree"
	cold=
	if [ "$n" -le "${FULL_MAX:-1000000}" ]; then
		measure "fleet validate cold" "$bin/fleet" validate "$tree"
		cold=$(cat "$work/last")
		measure "fleet validate warm" "$bin/fleet" validate "$tree"
	fi
	measure "fleet cluster add" "$bin/fleet" cluster add bench-new --tree "$tree" --dry-run --cert "$work/cert.pem" --known-hosts "$work/known_hosts"
	measure "fleet cluster upgrade" "$bin/fleet" cluster upgrade bench-0001 --version 1.36 --tree "$tree" --dry-run
	measure "fleet cluster remove" "$bin/fleet" cluster remove bench-0001 --tree "$tree" --dry-run
	measure "fleet app add" "$bin/fleet" app add payment-app --cluster bench-0001 --repo self --path ./manifests/apps/payment-app/overlays/staging --team payments --tree "$tree" --dry-run
	pr=$work/pr$n/manifests
	mkdir -p "$(dirname "$pr")"
	cp -r "$tree" "$pr"
	"$bin/fleet" cluster add bench-new --tree "$pr" --cert "$work/cert.pem" --known-hosts "$work/known_hosts" >/dev/null 2>&1
	(cd "$pr" && find gitops-workloads/clusters/bench-new -type f && echo gitops-system/workload-clusters/bench-new.yaml && echo gitops-system/workload-clusters/kustomization.yaml) >"$work/changed.txt"
	measure "fleet validate --changed" "$bin/fleet" validate "$pr" --changed "$work/changed.txt" --changed-prefix ""
	rm -rf "$(dirname "$pr")"
	if [ -n "$cold" ]; then
		printf '%-28s %8.2fx (fleet validate cold / anchor cold wall; < 1 means fleet is faster)\n' "ratio" "$(echo "scale=2; $cold / $anchor" | bc)"
	fi
done
