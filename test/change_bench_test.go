package test

// BenchmarkFleetChange measures what a request costs on an N-cluster tree
// (internal/testsupport/benchtree): `fleet cluster add NAME --dry-run` (every check of
// the new claim, nothing written), `fleet cluster upgrade`, `fleet cluster
// remove` and `fleet app add` (--dry-run) of an existing cluster, and
// `fleet validate --changed FILE` in pull-request mode for a cluster added
// to the tree. Iterations after the
// first run in a warm process; scripts/bench/bench.sh measures them cold.
//
//	FLEET_BENCH_SIZES=100,1000 go test ./test -run '^$' -bench FleetChange -benchtime 3x

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleetcmd"
	"github.com/gitops-fleet/eks-fleet/internal/fleet/fleettree"
	"github.com/gitops-fleet/eks-fleet/internal/testsupport/benchtree"
)

func fbCert(b testing.TB, dir string) (cert, knownHosts string) {
	b.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sealed-secret"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	cert = filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		b.Fatal(err)
	}
	knownHosts = filepath.Join(dir, "known_hosts")
	kh := "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
	if err := os.WriteFile(knownHosts, []byte(kh), 0o644); err != nil {
		b.Fatal(err)
	}
	return cert, knownHosts
}

func fbFleet(b *testing.B, args ...string) {
	b.Helper()
	var out, errb bytes.Buffer
	if code := fleetcmd.Run(context.Background(), args, &out, &errb); code != 0 {
		b.Fatalf("fleet %v: exit %d\n%s\n%s", args, code, out.String(), errb.String())
	}
}

func BenchmarkFleetChange(b *testing.B) {
	for _, n := range fbSizes() {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			tree := fbTree(b, n)
			cert, kh := fbCert(b, b.TempDir())
			b.Run("cluster-add", func(b *testing.B) {
				for b.Loop() {
					fbFleet(b, "cluster", "add", "bench-new", "--tree", tree, "--dry-run", "--cert", cert, "--known-hosts", kh)
				}
			})
			b.Run("cluster-upgrade", func(b *testing.B) {
				for b.Loop() {
					fbFleet(b, "cluster", "upgrade", benchtree.Name(1), "--version", "1.36", "--tree", tree, "--dry-run")
				}
			})
			b.Run("cluster-remove", func(b *testing.B) {
				for b.Loop() {
					fbFleet(b, "cluster", "remove", benchtree.Name(1), "--tree", tree, "--dry-run")
				}
			})
			b.Run("app-add", func(b *testing.B) {
				for b.Loop() {
					fbFleet(b, "app", "add", "payment-app", "--cluster", benchtree.Name(1), "--repo", "self",
						"--path", "./manifests/apps/payment-app/overlays/staging", "--team", "payments", "--tree", tree, "--dry-run")
				}
			})
			fbFleet(b, "cluster", "add", "bench-pr", "--tree", tree, "--cert", cert, "--known-hosts", kh)
			changed := filepath.Join(b.TempDir(), "changed.txt")
			list := fleettree.ClaimRel("bench-pr") + "\n" + fleettree.ClaimsDir + "/" + fleettree.Kustomization + "\n" +
				fleettree.WorkloadsRel("bench-pr") + "/" + fleettree.Kustomization + "\n" + fleettree.DeployKeyRel("bench-pr") + "\n"
			if err := os.WriteFile(changed, []byte(list), 0o644); err != nil {
				b.Fatal(err)
			}
			b.Run("validate-changed", func(b *testing.B) {
				for b.Loop() {
					fbFleet(b, "validate", tree, "--changed", changed, "--changed-prefix", "")
				}
			})
		})
	}
}
